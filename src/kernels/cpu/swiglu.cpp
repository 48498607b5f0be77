// swiglu.cpp — elementwise, row-parallel, vectorised with the shared exp (simd.h).
#include "kernels/cpu/swiglu.h"

#include "kernels/cpu/simd.h"

namespace mt {

namespace {
using namespace simd;
inline Vec sigmoid(Vec u) {
  const Vec one = set1(1.0f);
  return div(one, add(one, simd::exp(sub(zero(), u))));
}
}  // namespace

void swiglu_forward(float* z, const float* h, int64_t M, int64_t F) {
#pragma omp parallel for schedule(static) if (M * F > 16384)
  for (int64_t m = 0; m < M; ++m) {
    const float* u = h + m * 2 * F;
    const float* g = u + F;
    float* zr = z + m * F;
    for (int64_t f = 0; f < F; f += kLanes) {
      const Mask k = tail_mask(F - f);
      const Vec uf = load(k, u + f);
      const Vec gf = load(k, g + f);
      store(zr + f, k, mul(mul(uf, sigmoid(uf)), gf));
    }
  }
}

void swiglu_backward(float* dh, const float* dz, const float* h, int64_t M, int64_t F) {
  const Vec one = set1(1.0f);
#pragma omp parallel for schedule(static) if (M * F > 16384)
  for (int64_t m = 0; m < M; ++m) {
    const float* u = h + m * 2 * F;
    const float* g = u + F;
    const float* dzr = dz + m * F;
    float* du = dh + m * 2 * F;
    float* dg = du + F;
    for (int64_t f = 0; f < F; f += kLanes) {
      const Mask k = tail_mask(F - f);
      const Vec uf = load(k, u + f);
      const Vec gf = load(k, g + f);
      const Vec d = load(k, dzr + f);
      const Vec sig = sigmoid(uf);
      const Vec silu = mul(uf, sig);
      store(dg + f, k, mul(d, silu));
      // d silu/du = sig * (1 + u (1 - sig))
      const Vec dsilu = mul(sig, fmadd(uf, sub(one, sig), one));
      store(du + f, k, mul(mul(d, gf), dsilu));
    }
  }
}

}  // namespace mt
