// rng.h — counter-based randomness (Philox4x32-10 from Random123). Every draw
// is a pure function of (seed, stream, index), so results never depend on
// thread count, call order or where a run was interrupted.
#pragma once
#include <cstdint>

namespace mt {

// Four uniform 32-bit words for (seed, stream, counter).
void philox_block(uint64_t seed, uint64_t stream, uint64_t counter, uint32_t out[4]);

// 64 random bits: words 0 and 1 of the block at (seed, stream, counter).
inline uint64_t philox_u64(uint64_t seed, uint64_t stream, uint64_t counter) {
  uint32_t w[4];
  philox_block(seed, stream, counter, w);
  return uint64_t(w[0]) | uint64_t(w[1]) << 32;
}

// Uniform in (0, 1), from word `lane` (0..3) of the block at `counter`.
float uniform01(uint32_t word);

// 32 random bits for element `index` under `key`, for dithering (the
// stochastic rounding of optimizer state, core/bf16.h): Wellons' "lowbias32"
// integer hash (two multiply-xorshift rounds, full avalanche) of the index's
// low word xor a key that folds in its high word. Cheap enough per element
// in a vectorised loop, where a Philox block per element would cost more
// than the memory traffic of the loop; the rounding needs evenly spread
// bits, not a stream fit for sampling. DitherRange gives the same bits for
// a range with 32-bit arithmetic only.
inline uint32_t dither_mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}
inline uint32_t dither_key_of_word(uint32_t key, uint32_t high_word) { return key ^ (high_word * 0x9e3779b9u); }
inline uint32_t dither_bits(uint32_t key, uint64_t index) {
  return dither_mix(uint32_t(index) ^ dither_key_of_word(key, uint32_t(index >> 32)));
}
// The key of optimizer step `step` (1-based): a different dither each step.
inline uint32_t dither_key(int64_t step) {
  return dither_mix(uint32_t(step) ^ 0x6d745f31u) ^ uint32_t(uint64_t(step) >> 32);
}

// dither_bits(key, first + i) for i in [0, 2^32): the high word of the index
// is first's, or one more once the low word has wrapped.
struct DitherRange {
  uint32_t lo0, k0, k1;
  DitherRange(uint32_t key, uint64_t first)
      : lo0(uint32_t(first)),
        k0(dither_key_of_word(key, uint32_t(first >> 32))),
        k1(dither_key_of_word(key, uint32_t(first >> 32) + 1)) {}
  uint32_t operator()(uint32_t i) const {
    const uint32_t lo = lo0 + i;
    return dither_mix(lo ^ (lo < lo0 ? k1 : k0));
  }
};

// Fills `out[0..n)` with N(0, std^2) samples: element i depends only on
// (seed, stream, i). Box-Muller on Philox blocks; parallel and thread-count
// invariant.
void fill_normal(float* out, int64_t n, float std, uint64_t seed, uint64_t stream);

}  // namespace mt
