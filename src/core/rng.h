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

// Fills `out[0..n)` with N(0, std^2) samples: element i depends only on
// (seed, stream, i). Box-Muller on Philox blocks; parallel and thread-count
// invariant.
void fill_normal(float* out, int64_t n, float std, uint64_t seed, uint64_t stream);

}  // namespace mt
