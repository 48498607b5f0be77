// swiglu.cpp — elementwise, row-parallel.
#include "kernels/cpu/swiglu.h"

#include <cmath>

namespace mt {

void swiglu_forward(float* z, const float* h, int64_t M, int64_t F) {
#pragma omp parallel for schedule(static) if (M * F > 16384)
  for (int64_t m = 0; m < M; ++m) {
    const float* u = h + m * 2 * F;
    const float* g = u + F;
    float* zr = z + m * F;
#pragma omp simd
    for (int64_t f = 0; f < F; ++f) zr[f] = u[f] / (1.0f + std::exp(-u[f])) * g[f];
  }
}

void swiglu_backward(float* dh, const float* dz, const float* h, int64_t M, int64_t F) {
#pragma omp parallel for schedule(static) if (M * F > 16384)
  for (int64_t m = 0; m < M; ++m) {
    const float* u = h + m * 2 * F;
    const float* g = u + F;
    const float* dzr = dz + m * F;
    float* du = dh + m * 2 * F;
    float* dg = du + F;
#pragma omp simd
    for (int64_t f = 0; f < F; ++f) {
      float sig = 1.0f / (1.0f + std::exp(-u[f]));
      float silu = u[f] * sig;
      dg[f] = dzr[f] * silu;
      du[f] = dzr[f] * g[f] * sig * (1.0f + u[f] * (1.0f - sig));
    }
  }
}

}  // namespace mt
