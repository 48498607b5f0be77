// swiglu.cpp — elementwise, row-parallel, AVX-512 with the shared vector exp.
#include "kernels/cpu/swiglu.h"

#include "kernels/cpu/simd.h"

namespace mt {

namespace {
inline __m512 sigmoid(__m512 u) {
  const __m512 one = _mm512_set1_ps(1.0f);
  return _mm512_div_ps(one, _mm512_add_ps(one, simd::exp(_mm512_sub_ps(_mm512_setzero_ps(), u))));
}
}  // namespace

void swiglu_forward(float* z, const float* h, int64_t M, int64_t F) {
#pragma omp parallel for schedule(static) if (M * F > 16384)
  for (int64_t m = 0; m < M; ++m) {
    const float* u = h + m * 2 * F;
    const float* g = u + F;
    float* zr = z + m * F;
    for (int64_t f = 0; f < F; f += 16) {
      const __mmask16 k = simd::tail_mask(F - f);
      const __m512 uf = _mm512_maskz_loadu_ps(k, u + f);
      const __m512 gf = _mm512_maskz_loadu_ps(k, g + f);
      _mm512_mask_storeu_ps(zr + f, k, _mm512_mul_ps(_mm512_mul_ps(uf, sigmoid(uf)), gf));
    }
  }
}

void swiglu_backward(float* dh, const float* dz, const float* h, int64_t M, int64_t F) {
  const __m512 one = _mm512_set1_ps(1.0f);
#pragma omp parallel for schedule(static) if (M * F > 16384)
  for (int64_t m = 0; m < M; ++m) {
    const float* u = h + m * 2 * F;
    const float* g = u + F;
    const float* dzr = dz + m * F;
    float* du = dh + m * 2 * F;
    float* dg = du + F;
    for (int64_t f = 0; f < F; f += 16) {
      const __mmask16 k = simd::tail_mask(F - f);
      const __m512 uf = _mm512_maskz_loadu_ps(k, u + f);
      const __m512 gf = _mm512_maskz_loadu_ps(k, g + f);
      const __m512 d = _mm512_maskz_loadu_ps(k, dzr + f);
      const __m512 sig = sigmoid(uf);
      const __m512 silu = _mm512_mul_ps(uf, sig);
      _mm512_mask_storeu_ps(dg + f, k, _mm512_mul_ps(d, silu));
      // d silu/du = sig * (1 + u (1 - sig))
      const __m512 dsilu = _mm512_mul_ps(sig, _mm512_fmadd_ps(uf, _mm512_sub_ps(one, sig), one));
      _mm512_mask_storeu_ps(du + f, k, _mm512_mul_ps(_mm512_mul_ps(d, gf), dsilu));
    }
  }
}

}  // namespace mt
