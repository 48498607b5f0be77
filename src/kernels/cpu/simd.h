// simd.h — AVX-512 building blocks shared by the CPU kernels: a vectorised
// exp accurate to ~2 ulp (Cody-Waite range reduction, degree-6 polynomial,
// scalef), and a register-blocked small GEMM for operands that live in L1/L2
// (attention blocks), where a library call would cost more than the math.
// Header-only so each kernel inlines what it uses.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace mt::simd {

inline __m512 exp(__m512 x) {
  const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
  x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.3762626647949f)), _mm512_set1_ps(-103.0f));
  const __m512 t = _mm512_mul_ps(x, log2e);
  const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // f = x - n ln2, in two parts for accuracy.
  __m512 f = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  f = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187045e-06f), f);
  __m512 p = _mm512_set1_ps(1.3888889e-3f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(8.3333338e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(4.1666668e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.6666667e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

inline __mmask16 tail_mask(int64_t n) { return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1u); }

// C[MR x N] += A[MR x K] * B[K x N] for one strip of MR rows (MR <= 8), all
// row-major with leading dims; N handled 32 columns at a time with masks.
template <int MR>
inline void gemm_strip(float* C, const float* A, const float* B, int64_t N, int64_t K, int64_t lda,
                       int64_t ldb, int64_t ldc) {
  for (int64_t j0 = 0; j0 < N; j0 += 32) {
    const int64_t nr = N - j0 < 32 ? N - j0 : 32;
    const __mmask16 m0 = tail_mask(nr), m1 = tail_mask(nr > 16 ? nr - 16 : 0);
    __m512 c0[MR], c1[MR];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      c0[r] = _mm512_maskz_loadu_ps(m0, C + r * ldc + j0);
      c1[r] = _mm512_maskz_loadu_ps(m1, C + r * ldc + j0 + 16);
    }
    for (int64_t k = 0; k < K; ++k) {
      const __m512 b0 = _mm512_maskz_loadu_ps(m0, B + k * ldb + j0);
      const __m512 b1 = _mm512_maskz_loadu_ps(m1, B + k * ldb + j0 + 16);
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const __m512 a = _mm512_set1_ps(A[r * lda + k]);
        c0[r] = _mm512_fmadd_ps(a, b0, c0[r]);
        c1[r] = _mm512_fmadd_ps(a, b1, c1[r]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      _mm512_mask_storeu_ps(C + r * ldc + j0, m0, c0[r]);
      _mm512_mask_storeu_ps(C + r * ldc + j0 + 16, m1, c1[r]);
    }
  }
}

// C[M x N] += A[M x K] * B[K x N], row-major. Serial: callers parallelise
// over independent blocks, so results never depend on the thread count.
inline void small_gemm_acc(float* C, const float* A, const float* B, int64_t M, int64_t N, int64_t K,
                           int64_t lda, int64_t ldb, int64_t ldc) {
  int64_t i = 0;
  for (; i + 8 <= M; i += 8) gemm_strip<8>(C + i * ldc, A + i * lda, B, N, K, lda, ldb, ldc);
  switch (M - i) {
    case 7: gemm_strip<7>(C + i * ldc, A + i * lda, B, N, K, lda, ldb, ldc); break;
    case 6: gemm_strip<6>(C + i * ldc, A + i * lda, B, N, K, lda, ldb, ldc); break;
    case 5: gemm_strip<5>(C + i * ldc, A + i * lda, B, N, K, lda, ldb, ldc); break;
    case 4: gemm_strip<4>(C + i * ldc, A + i * lda, B, N, K, lda, ldb, ldc); break;
    case 3: gemm_strip<3>(C + i * ldc, A + i * lda, B, N, K, lda, ldb, ldc); break;
    case 2: gemm_strip<2>(C + i * ldc, A + i * lda, B, N, K, lda, ldb, ldc); break;
    case 1: gemm_strip<1>(C + i * ldc, A + i * lda, B, N, K, lda, ldb, ldc); break;
    default: break;
  }
}

// out[c][r] = in[r][c] for an R x C block, in 16 x 16 tiles so both sides
// stay within a few cache lines (a naive loop strides a cache line per store).
inline void transpose(float* out, const float* in, int64_t R, int64_t C, int64_t ld_in, int64_t ld_out) {
  constexpr int64_t kTile = 16;
  for (int64_t r0 = 0; r0 < R; r0 += kTile)
    for (int64_t c0 = 0; c0 < C; c0 += kTile) {
      const int64_t r1 = r0 + kTile < R ? r0 + kTile : R, c1 = c0 + kTile < C ? c0 + kTile : C;
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t r = r0; r < r1; ++r) out[c * ld_out + r] = in[r * ld_in + c];
    }
}

}  // namespace mt::simd
