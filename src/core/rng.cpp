// rng.cpp — Philox wrappers and thread-count-invariant normal fill.
#include "core/rng.h"

#include <Random123/philox.h>

#include <cmath>

namespace mt {

void philox_block(uint64_t seed, uint64_t stream, uint64_t counter, uint32_t out[4]) {
  r123::Philox4x32 gen;
  r123::Philox4x32::key_type key = {{uint32_t(seed), uint32_t(seed >> 32)}};
  r123::Philox4x32::ctr_type ctr = {
      {uint32_t(counter), uint32_t(counter >> 32), uint32_t(stream), uint32_t(stream >> 32)}};
  auto r = gen(ctr, key);
  for (int i = 0; i < 4; ++i) out[i] = r[i];
}

float uniform01(uint32_t word) {
  // (word + 0.5) / 2^32: never exactly 0 or 1, so log() below is finite.
  return float((double(word) + 0.5) * (1.0 / 4294967296.0));
}

void fill_normal(float* out, int64_t n, float std, uint64_t seed, uint64_t stream) {
  const int64_t blocks = (n + 3) / 4;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    uint32_t w[4];
    philox_block(seed, stream, uint64_t(b), w);
    for (int p = 0; p < 2; ++p) {
      double u1 = uniform01(w[2 * p]), u2 = uniform01(w[2 * p + 1]);
      double r = std::sqrt(-2.0 * std::log(u1));
      double z0 = r * std::cos(2.0 * M_PI * u2), z1 = r * std::sin(2.0 * M_PI * u2);
      int64_t i0 = 4 * b + 2 * p;
      if (i0 < n) out[i0] = float(z0) * std;
      if (i0 + 1 < n) out[i0 + 1] = float(z1) * std;
    }
  }
}

}  // namespace mt
