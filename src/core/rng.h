// rng.h — counter-based randomness (Philox4x32-10 from Random123). Every draw
// is a pure function of (seed, stream, index), so results never depend on
// thread count, call order or where a run was interrupted.
#pragma once
#include <cstdint>

namespace mt {

// Four uniform 32-bit words for (seed, stream, counter).
void philox_block(uint64_t seed, uint64_t stream, uint64_t counter, uint32_t out[4]);

// Uniform in (0, 1), from word `lane` (0..3) of the block at `counter`.
float uniform01(uint32_t word);

// 32 random bits for element `index` under `key`, for dithering (the
// stochastic rounding of optimizer state, core/bf16.h): Wellons' "triple32"
// integer hash (three multiply-xorshift rounds, full avalanche) of the
// index folded to 32 bits and the key. Cheap enough to run per element in a
// vectorised loop, where a Philox block per element would cost several
// times the memory traffic of the loop itself. Indices 2^32 apart may share
// bits, which only correlates the rounding of far-apart elements.
inline uint32_t dither_bits(uint32_t key, uint64_t index) {
  uint32_t x = uint32_t(index) ^ (uint32_t(index >> 32) * 0x9e3779b9u) ^ key;
  x ^= x >> 17;
  x *= 0xed5ad4bbu;
  x ^= x >> 11;
  x *= 0xac4c1b51u;
  x ^= x >> 15;
  x *= 0x31848babu;
  x ^= x >> 14;
  return x;
}
// The key of optimizer step `step` (1-based): a different dither each step.
inline uint32_t dither_key(int64_t step) { return dither_bits(0x6d745f31u, uint64_t(step)); }

// Fills `out[0..n)` with N(0, std^2) samples: element i depends only on
// (seed, stream, i). Box-Muller on Philox blocks; parallel and thread-count
// invariant.
void fill_normal(float* out, int64_t n, float std, uint64_t seed, uint64_t stream);

}  // namespace mt
