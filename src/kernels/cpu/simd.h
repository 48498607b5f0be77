// simd.h — the vector building blocks shared by the CPU kernels, for the
// widest ISA the build targets: AVX-512 (16 float lanes, mask registers) or
// AVX2 + FMA (8 lanes, lane masks). The kernels are written once against
// `simd::Vec` / `simd::Mask` and the functions below; results are bitwise
// thread-count invariant on either ISA (reductions run in a fixed lane
// order), but an AVX-512 build and an AVX2 build round differently.
// Also: a vectorised exp accurate to ~2 ulp (Cody-Waite range reduction,
// degree-6 polynomial, exact power-of-two scaling) and a register-blocked
// small GEMM for operands that live in L1/L2 (attention blocks), where a
// library call would cost more than the math. Header-only so each kernel
// inlines what it uses.
#pragma once
#include <immintrin.h>

#include <cstdint>

#if !defined(__AVX512F__) && !(defined(__AVX2__) && defined(__FMA__))
#error "moetrain's CPU kernels need AVX-512F or AVX2+FMA (build with -march=native on such a machine)"
#endif

namespace mt::simd {

#if defined(__AVX512F__)
using Vec = __m512;
using Mask = __mmask16;
constexpr int64_t kLanes = 16;

inline Vec set1(float x) { return _mm512_set1_ps(x); }
inline Vec zero() { return _mm512_setzero_ps(); }
inline Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
inline Vec sub(Vec a, Vec b) { return _mm512_sub_ps(a, b); }
inline Vec mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
inline Vec div(Vec a, Vec b) { return _mm512_div_ps(a, b); }
inline Vec max(Vec a, Vec b) { return _mm512_max_ps(a, b); }
inline Vec min(Vec a, Vec b) { return _mm512_min_ps(a, b); }
inline Vec fmadd(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }    // a*b + c
inline Vec fmsub(Vec a, Vec b, Vec c) { return _mm512_fmsub_ps(a, b, c); }    // a*b - c
inline Vec fnmadd(Vec a, Vec b, Vec c) { return _mm512_fnmadd_ps(a, b, c); }  // c - a*b
inline Vec round_nearest(Vec a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
// p * 2^n for integral n (scalef is exact, also where 2^n is subnormal).
inline Vec scale_pow2(Vec p, Vec n) { return _mm512_scalef_ps(p, n); }

// The first min(n, kLanes) lanes.
inline Mask tail_mask(int64_t n) { return n >= 16 ? Mask(0xFFFF) : Mask((1u << n) - 1u); }
inline Vec load(Mask k, const float* p) { return _mm512_maskz_loadu_ps(k, p); }  // masked-off lanes read 0
inline void store(float* p, Mask k, Vec v) { _mm512_mask_storeu_ps(p, k, v); }
// Lanes in k take op(acc, x); the others keep acc.
inline Vec mask_max(Vec acc, Mask k, Vec x) { return _mm512_mask_max_ps(acc, k, acc, x); }
inline Vec mask_add(Vec acc, Mask k, Vec x) { return _mm512_mask_add_ps(acc, k, acc, x); }
#else
using Vec = __m256;
using Mask = __m256i;  // all-ones lanes are active
constexpr int64_t kLanes = 8;

inline Vec set1(float x) { return _mm256_set1_ps(x); }
inline Vec zero() { return _mm256_setzero_ps(); }
inline Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
inline Vec sub(Vec a, Vec b) { return _mm256_sub_ps(a, b); }
inline Vec mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
inline Vec div(Vec a, Vec b) { return _mm256_div_ps(a, b); }
inline Vec max(Vec a, Vec b) { return _mm256_max_ps(a, b); }
inline Vec min(Vec a, Vec b) { return _mm256_min_ps(a, b); }
inline Vec fmadd(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline Vec fmsub(Vec a, Vec b, Vec c) { return _mm256_fmsub_ps(a, b, c); }
inline Vec fnmadd(Vec a, Vec b, Vec c) { return _mm256_fnmadd_ps(a, b, c); }
inline Vec round_nearest(Vec a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
// 2^n built in the exponent field; n is split in two halves so that each
// factor stays a normal float over exp's whole clamped range (n in [-149, 128]).
inline Vec scale_pow2(Vec p, Vec n) {
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i h1 = _mm256_srai_epi32(ni, 1), h2 = _mm256_sub_epi32(ni, h1);
  const __m256i bias = _mm256_set1_epi32(127);
  const Vec f1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h1, bias), 23));
  const Vec f2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, f1), f2);
}

inline Mask tail_mask(int64_t n) {
  const int32_t k = n >= 8 ? 8 : int32_t(n);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline Vec load(Mask k, const float* p) { return _mm256_maskload_ps(p, k); }
inline void store(float* p, Mask k, Vec v) { _mm256_maskstore_ps(p, k, v); }
inline Vec mask_max(Vec acc, Mask k, Vec x) { return _mm256_blendv_ps(acc, _mm256_max_ps(acc, x), _mm256_castsi256_ps(k)); }
inline Vec mask_add(Vec acc, Mask k, Vec x) { return _mm256_blendv_ps(acc, _mm256_add_ps(acc, x), _mm256_castsi256_ps(k)); }
#endif

// Horizontal reductions (a fixed tree over the lanes).
#if defined(__AVX512F__)
inline float reduce_add(Vec v) { return _mm512_reduce_add_ps(v); }
inline float reduce_max(Vec v) { return _mm512_reduce_max_ps(v); }
#else
inline float reduce_add(Vec v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline float reduce_max(Vec v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
#endif

inline Vec exp(Vec x) {
  const Vec log2e = set1(1.44269504088896341f);
  x = max(min(x, set1(88.3762626647949f)), set1(-103.0f));
  const Vec n = round_nearest(mul(x, log2e));
  // f = x - n ln2, in two parts for accuracy.
  Vec f = fnmadd(n, set1(0.693145751953125f), x);
  f = fnmadd(n, set1(1.428606765330187045e-06f), f);
  Vec p = set1(1.3888889e-3f);
  p = fmadd(p, f, set1(8.3333338e-3f));
  p = fmadd(p, f, set1(4.1666668e-2f));
  p = fmadd(p, f, set1(1.6666667e-1f));
  p = fmadd(p, f, set1(0.5f));
  p = fmadd(p, f, set1(1.0f));
  p = fmadd(p, f, set1(1.0f));
  return scale_pow2(p, n);
}

// 1 / (1 + e^-u), by the exp above.
inline Vec sigmoid(Vec u) { return div(set1(1.0f), add(set1(1.0f), exp(sub(zero(), u)))); }

// C[MR x N] += A[MR x K] * B[K x N] for one strip of MR rows (MR <= 8), all
// row-major with leading dims; N handled 2 * kLanes columns at a time with masks.
// kTransA: A is stored transposed (K x MR rows of lda), read in place; the
// multiply-adds are the same, in the same order, as on a transposed copy.
template <int MR, bool kTransA = false>
inline void gemm_strip(float* C, const float* A, const float* B, int64_t N, int64_t K, int64_t lda, int64_t ldb,
                       int64_t ldc) {
  constexpr int64_t W = 2 * kLanes;
  for (int64_t j0 = 0; j0 < N; j0 += W) {
    const int64_t nr = N - j0 < W ? N - j0 : W;
    const Mask m0 = tail_mask(nr), m1 = tail_mask(nr > kLanes ? nr - kLanes : 0);
    if (nr <= kLanes) {  // one vector of columns (the router's 16 experts): no multiply-adds on masked-off lanes
      Vec c0[MR];
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) c0[r] = load(m0, C + r * ldc + j0);
      for (int64_t k = 0; k < K; ++k) {
        const Vec b0 = load(m0, B + k * ldb + j0);
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) c0[r] = fmadd(set1(kTransA ? A[k * lda + r] : A[r * lda + k]), b0, c0[r]);
      }
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) store(C + r * ldc + j0, m0, c0[r]);
      continue;
    }
    Vec c0[MR], c1[MR];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      c0[r] = load(m0, C + r * ldc + j0);
      c1[r] = load(m1, C + r * ldc + j0 + kLanes);
    }
    for (int64_t k = 0; k < K; ++k) {
      const Vec b0 = load(m0, B + k * ldb + j0);
      const Vec b1 = load(m1, B + k * ldb + j0 + kLanes);
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const Vec a = set1(kTransA ? A[k * lda + r] : A[r * lda + k]);
        c0[r] = fmadd(a, b0, c0[r]);
        c1[r] = fmadd(a, b1, c1[r]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      store(C + r * ldc + j0, m0, c0[r]);
      store(C + r * ldc + j0 + kLanes, m1, c1[r]);
    }
  }
}

// Which zeros of a triangular product small_gemm_acc may skip: A lower triangular (A[i][k] = 0
// for k > i), A upper triangular (A[i][k] = 0 for k < i), or only C's lower triangle (j <= i)
// wanted (the rest of C is left partly written). Each strip of rows i..i+MR-1 narrows K or N to
// what its rows need, so the skipped terms are exact zeros and C's wanted entries keep their
// bits (up to the sign of an exact zero).
enum Triangle : unsigned { kFull = 0, kLowerA = 1, kUpperA = 2, kLowerC = 4 };

template <int MR, bool kTransA = false>
inline void gemm_strip_tri(float* C, const float* A, const float* B, int64_t i, int64_t N, int64_t K, int64_t lda,
                           int64_t ldb, int64_t ldc, unsigned tri) {
  const int64_t k0 = tri & kUpperA ? (i < K ? i : K) : 0;
  const int64_t k1 = tri & kLowerA ? (i + MR < K ? i + MR : K) : K;
  const int64_t n1 = tri & kLowerC ? (i + MR < N ? i + MR : N) : N;
  const float* a = kTransA ? A + k0 * lda + i : A + i * lda + k0;
  if (k1 > k0 && n1 > 0) gemm_strip<MR, kTransA>(C + i * ldc, a, B + k0 * ldb, n1, k1 - k0, lda, ldb, ldc);
}

// C[M x N] += op(A)[M x K] * B[K x N], row-major, skipping the zeros `tri` names (of op(A));
// op(A) = A (M x K rows of lda) or, kTransA, the transpose of A stored K x M (rows of lda).
// Serial: callers parallelise over independent blocks, so results never depend on the thread count.
template <bool kTransA = false>
inline void small_gemm_acc(float* C, const float* A, const float* B, int64_t M, int64_t N, int64_t K, int64_t lda,
                           int64_t ldb, int64_t ldc, unsigned tri = kFull) {
  using Strip =
      void (*)(float*, const float*, const float*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, unsigned);
  // The last strip's rows, M % 8 of them (a table: MR is a template argument).
  static constexpr Strip kTail[8] = {nullptr,
                                     gemm_strip_tri<1, kTransA>,
                                     gemm_strip_tri<2, kTransA>,
                                     gemm_strip_tri<3, kTransA>,
                                     gemm_strip_tri<4, kTransA>,
                                     gemm_strip_tri<5, kTransA>,
                                     gemm_strip_tri<6, kTransA>,
                                     gemm_strip_tri<7, kTransA>};
  int64_t i = 0;
  for (; i + 8 <= M; i += 8) gemm_strip_tri<8, kTransA>(C, A, B, i, N, K, lda, ldb, ldc, tri);
  if (M > i) kTail[M - i](C, A, B, i, N, K, lda, ldb, ldc, tri);
}

#if defined(__AVX512F__)
// One 16 x 16 tile transposed in registers: unpack pairs of rows, then pairs of pairs, then
// gather the 128-bit lanes (column m of each 4-row group sits in lane m / 4 of u[m % 4]).
inline void transpose_tile(float* out, const float* in, int64_t ld_in, int64_t ld_out) {
  __m512 r[16], t[16], u[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(in + i * ld_in);
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int g = 0; g < 16; g += 4) {  // rows g..g+3: u[g + m] holds column 4L + m in lane L
    const __m512d t0 = _mm512_castps_pd(t[g]), t1 = _mm512_castps_pd(t[g + 1]);
    const __m512d t2 = _mm512_castps_pd(t[g + 2]), t3 = _mm512_castps_pd(t[g + 3]);
    u[g] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
    u[g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
    u[g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
    u[g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
  }
  for (int m = 0; m < 4; ++m) {
    const __m512 a = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x88), b = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xdd);
    const __m512 c = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x88);
    const __m512 d = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xdd);
    _mm512_storeu_ps(out + m * ld_out, _mm512_shuffle_f32x4(a, c, 0x88));
    _mm512_storeu_ps(out + (8 + m) * ld_out, _mm512_shuffle_f32x4(a, c, 0xdd));
    _mm512_storeu_ps(out + (4 + m) * ld_out, _mm512_shuffle_f32x4(b, d, 0x88));
    _mm512_storeu_ps(out + (12 + m) * ld_out, _mm512_shuffle_f32x4(b, d, 0xdd));
  }
}
#else
// One 8 x 8 tile transposed in registers (the AVX2 form of the same three stages).
inline void transpose_tile(float* out, const float* in, int64_t ld_in, int64_t ld_out) {
  __m256 r[8], t[8], u[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(in + i * ld_in);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int g = 0; g < 8; g += 4) {
    const __m256d t0 = _mm256_castps_pd(t[g]), t1 = _mm256_castps_pd(t[g + 1]);
    const __m256d t2 = _mm256_castps_pd(t[g + 2]), t3 = _mm256_castps_pd(t[g + 3]);
    u[g] = _mm256_castpd_ps(_mm256_unpacklo_pd(t0, t2));
    u[g + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(t0, t2));
    u[g + 2] = _mm256_castpd_ps(_mm256_unpacklo_pd(t1, t3));
    u[g + 3] = _mm256_castpd_ps(_mm256_unpackhi_pd(t1, t3));
  }
  for (int m = 0; m < 4; ++m) {
    _mm256_storeu_ps(out + m * ld_out, _mm256_permute2f128_ps(u[m], u[4 + m], 0x20));
    _mm256_storeu_ps(out + (4 + m) * ld_out, _mm256_permute2f128_ps(u[m], u[4 + m], 0x31));
  }
}
#endif

// Asks for n floats from p to be brought into L2 ahead of use, for reading or (prefetch_l2_write)
// for writing (a hint: no effect on results). For blocks read or written a page or more apart,
// where the hardware prefetcher starts late.
inline void prefetch_l2(const float* p, int64_t n) {
  constexpr int64_t kLine = 64 / sizeof(float);
  for (int64_t e = 0; e < n; e += kLine) __builtin_prefetch(p + e, 0, 2);
}
// For writing `bytes` bytes of any element type (bf16 operands too).
inline void prefetch_l2_write_bytes(void* p, int64_t bytes) {
  for (int64_t e = 0; e < bytes; e += 64) __builtin_prefetch(static_cast<char*>(p) + e, 1, 2);
}
inline void prefetch_l2_write(float* p, int64_t n) { prefetch_l2_write_bytes(p, n * int64_t(sizeof(float))); }
// Into L1, for reading `bytes` bytes needed within a few hundred cycles.
inline void prefetch_l1_bytes(const void* p, int64_t bytes) {
  for (int64_t e = 0; e < bytes; e += 64) __builtin_prefetch(static_cast<const char*>(p) + e, 0, 3);
}

// Copies `bytes` (a multiple of 64) from src to a 64-byte-aligned dst with non-temporal stores,
// which write whole lines without reading them first: for output that is not read again soon
// (a packed weight, read next from memory by the next step's products). The caller fences
// (stream_fence) before anything else reads dst.
inline void stream_copy(void* dst, const void* src, int64_t bytes) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
#if defined(__AVX512F__)
  for (int64_t e = 0; e < bytes; e += 64)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + e), _mm512_loadu_si512(reinterpret_cast<const void*>(s + e)));
#else
  for (int64_t e = 0; e < bytes; e += 32)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + e), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + e)));
#endif
}
// Orders the calling thread's non-temporal stores before its later stores and loads elsewhere.
inline void stream_fence() { _mm_sfence(); }

// out[c][r] = in[r][c] for an R x C block: whole kLanes x kLanes tiles in registers, the ragged
// edges element by element. Data movement only: the same bits on every path.
inline void transpose(float* out, const float* in, int64_t R, int64_t C, int64_t ld_in, int64_t ld_out) {
  constexpr int64_t kTile = kLanes;
  for (int64_t r0 = 0; r0 < R; r0 += kTile)
    for (int64_t c0 = 0; c0 < C; c0 += kTile) {
      const int64_t r1 = r0 + kTile < R ? r0 + kTile : R, c1 = c0 + kTile < C ? c0 + kTile : C;
      if (r1 - r0 == kTile && c1 - c0 == kTile) {
        transpose_tile(out + c0 * ld_out + r0, in + r0 * ld_in + c0, ld_in, ld_out);
        continue;
      }
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t r = r0; r < r1; ++r) out[c * ld_out + r] = in[r * ld_in + c];
    }
}

}  // namespace mt::simd
