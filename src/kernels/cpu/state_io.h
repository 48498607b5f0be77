// state_io.h — loads and stores of optimizer state held in fp32 or bf16, for
// the elementwise optimizer kernels (adamw.cpp, muon.cpp), which are written
// once over either. A store returns the value as stored: with bf16 state the
// kernels go on with the rounded moment, so a step depends on the state
// alone and a restored checkpoint continues bitwise.
#pragma once
#include <cstdint>

#include "core/bf16.h"
#include "core/rng.h"

namespace mt::state_io {

inline float load(const float* p, int64_t i) { return p[i]; }
inline float load(const bf16* p, int64_t i) { return bf16_to_f32(p[i]); }

// `r`: 16 random bits in its low half (ignored by fp32 state).
inline float store(float* p, int64_t i, float x, uint32_t) {
  p[i] = x;
  return x;
}
inline float store(bf16* p, int64_t i, float x, uint32_t r) {
  p[i] = f32_to_bf16_stochastic(x, r);
  return bf16_to_f32(p[i]);
}

// The dither bits of element i of a range (DitherRange, core/rng.h); fp32
// state needs none (and the compiler drops the hash).
template <typename S>
inline uint32_t bits(const DitherRange& d, int64_t i) {
  if constexpr (sizeof(S) == sizeof(float)) {
    return 0;
  } else {
    return d(uint32_t(i));
  }
}

}  // namespace mt::state_io
