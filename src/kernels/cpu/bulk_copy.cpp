// bulk_copy.cpp — see the header.
#include "kernels/cpu/bulk_copy.h"

#include <omp.h>

#include <algorithm>

namespace mt {
namespace {

// Below this many floats (256 KB) a fork and join costs more than it saves.
constexpr int64_t kParallelFloats = int64_t(1) << 16;

bool serial(int64_t n) { return n < kParallelFloats || omp_in_parallel(); }

}  // namespace

void bulk_copy(float* out, const float* in, int64_t n) {
  if (serial(n)) {
    std::copy(in, in + n, out);
    return;
  }
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = in[i];
}

void bulk_fill(float* out, int64_t n, float value) {
  if (serial(n)) {
    std::fill(out, out + n, value);
    return;
  }
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = value;
}

}  // namespace mt
