// random.h — deterministic test inputs from the project's counter-based RNG.
#pragma once
#include <cstdint>
#include <vector>

#include "core/rng.h"

namespace mt::testing {

// n samples of N(0, std^2), a pure function of (seed, stream).
inline std::vector<float> randn(int64_t n, float std, uint64_t seed, uint64_t stream = 0) {
  std::vector<float> v(static_cast<size_t>(n));
  fill_normal(v.data(), n, std, seed, stream);
  return v;
}

// A uniform 32-bit word, a pure function of (seed, stream, i).
inline uint32_t rand_u32(uint64_t seed, uint64_t stream, uint64_t i) {
  uint32_t w[4];
  philox_block(seed, stream, i, w);
  return w[0];
}

}  // namespace mt::testing
