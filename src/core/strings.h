// strings.h — small text helpers shared by the strict config loaders.
#pragma once
#include <cstddef>
#include <string_view>

namespace mt {

// Levenshtein distance, for "did you mean" suggestions on unknown keys.
size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace mt
