// check.h — MT_CHECK for broken invariants (never for user input): always on,
// prints the condition, location and the values that broke it, then aborts.
#pragma once
#include <fmt/format.h>
#include <cstdio>
#include <cstdlib>

#define MT_CHECK(cond, ...)                                                              \
  do {                                                                                   \
    if (!(cond)) [[unlikely]] {                                                          \
      std::fprintf(stderr, "MT_CHECK failed: %s at %s:%d: %s\n", #cond, __FILE__, __LINE__, \
                   fmt::format(__VA_ARGS__).c_str());                                    \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)
