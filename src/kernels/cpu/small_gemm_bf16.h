// small_gemm_bf16.h — simd::small_gemm_acc's products with bf16 operands and fp32 accumulation,
// for CPUs with AVX512-BF16 (Zen 4 and 5, Sapphire Rapids): vdpbf16ps multiplies two pairs of
// bf16 per lane, twice the fp32 FMA's work per instruction. Operands arrive in fp32 and are
// rounded to bf16 (round to nearest even, as every GEMM conversion in moetrain) into per-thread
// panels, the way flash-linear-attention's chunk kernels feed bf16 tiles to tensor cores:
// - A's rows as pairs along K (A[i][2p], A[i][2p+1]) in one 32-bit word, read by broadcast;
// - B as "VNNI" pairs: word (p, j) holds B[2p][j] and B[2p + 1][j].
// An odd K is padded with a zero row/column of pairs. The triangle flags mean what they mean for
// simd::small_gemm_acc; a strip's K range widens to whole pairs, which adds only exact zeros of
// op(A) (its triangle, or the padding). Serial, like small_gemm_acc.
// Where the build has no AVX512-BF16, bf16_dot_available() is false and nothing here is called.
#pragma once
#include <cstdint>
#include <vector>

#include "core/bf16.h"
#include "kernels/cpu/simd.h"

namespace mt::simd {

constexpr bool bf16_dot_available() {
#if defined(__AVX512BF16__)
  return true;
#else
  return false;
#endif
}

#if defined(__AVX512BF16__)
namespace bf16_detail {

// Words of a padded row of N columns: a multiple of 32 so a strip's two 16-wide loads stay inside.
inline int64_t padded_cols(int64_t N) { return (N + 31) / 32 * 32; }

// dst (P = ceil(K / 2) rows of ldd words): word (p, j) = {src[2p][j], src[2p + 1][j]} for j < N,
// zero on the padding columns up to ldd; src is K x N fp32 with rows of lds.
inline void pack_pairs_by_column(uint32_t* dst, const float* src, int64_t K, int64_t N, int64_t lds, int64_t ldd) {
  // Interleave the two rows' halves of cvtne2ps's result: lane 2m <- m, lane 2m + 1 <- 16 + m.
  alignas(64) static constexpr uint16_t kIdx[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                                    8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i idx = _mm512_load_si512(kIdx);
  for (int64_t p = 0; 2 * p < K; ++p) {
    const float* r0 = src + 2 * p * lds;
    const float* r1 = 2 * p + 1 < K ? r0 + lds : nullptr;
    uint32_t* out = dst + p * ldd;
    for (int64_t j = 0; j < ldd; j += 16) {
      const Mask m = tail_mask(N - j > 0 ? N - j : 0);
      const __m512 x0 = load(m, r0 + j), x1 = r1 ? load(m, r1 + j) : zero();
      const __m512i v = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(x1, x0));
      _mm512_storeu_si512(out + j, _mm512_permutexvar_epi16(idx, v));
    }
  }
}

// dst (M rows of ldd >= ceil(K / 2) words): word (i, p) = {src[i][2p], src[i][2p + 1]}; src is
// M x K fp32 with rows of lds. Consecutive floats become consecutive bf16, so a row is the
// project's plain conversion (core/bf16.h); an odd K's last pair takes a zero.
inline void pack_pairs_by_row(uint32_t* dst, const float* src, int64_t M, int64_t K, int64_t lds, int64_t ldd) {
  for (int64_t i = 0; i < M; ++i) {
    bf16* row = reinterpret_cast<bf16*>(dst + i * ldd);
    convert_f32_to_bf16_span(row, src + i * lds, K);
    if (K % 2) row[K] = bf16{0};
  }
}

// C[MR x N] += sum over pairs p in [p0, p1) of A's pair (r, p) times B's pair (p, j): A's word
// (r, p) at a[r * ar + p * ap], B's pair row p at b + p * ldb (words, padded to 32 columns).
template <int MR>
inline void strip(float* C, const uint32_t* a, int64_t ar, int64_t ap, const uint32_t* b, int64_t ldb, int64_t N,
                  int64_t p0, int64_t p1, int64_t ldc) {
  for (int64_t j0 = 0; j0 < N; j0 += 32) {
    const int64_t nr = N - j0 < 32 ? N - j0 : 32;
    const Mask m0 = tail_mask(nr), m1 = tail_mask(nr > 16 ? nr - 16 : 0);
    __m512 c0[MR], c1[MR];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      c0[r] = load(m0, C + r * ldc + j0);
      c1[r] = load(m1, C + r * ldc + j0 + 16);
    }
    for (int64_t p = p0; p < p1; ++p) {
      const __m512bh b0 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(b + p * ldb + j0));
      const __m512bh b1 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(b + p * ldb + j0 + 16));
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const __m512bh w = reinterpret_cast<__m512bh>(_mm512_set1_epi32(int(a[r * ar + p * ap])));
        c0[r] = _mm512_dpbf16_ps(c0[r], w, b0);
        c1[r] = _mm512_dpbf16_ps(c1[r], w, b1);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      store(C + r * ldc + j0, m0, c0[r]);
      store(C + r * ldc + j0 + 16, m1, c1[r]);
    }
  }
}

using Strip = void (*)(float*, const uint32_t*, int64_t, int64_t, const uint32_t*, int64_t, int64_t, int64_t, int64_t,
                       int64_t);
inline constexpr Strip kStrips[9] = {nullptr,  strip<1>, strip<2>, strip<3>, strip<4>,
                                     strip<5>, strip<6>, strip<7>, strip<8>};

// Per-thread, grow-only panels (docs/kernels.md).
struct Panels {
  std::vector<uint32_t> a, b;
  uint32_t* grow(std::vector<uint32_t>& v, int64_t n) {
    if (int64_t(v.size()) < n) v.resize(size_t(n));
    return v.data();
  }
};
inline thread_local Panels tls_panels;

}  // namespace bf16_detail

// C[M x N] += op(A)[M x K] * B[K x N] with op(A) and B rounded to bf16, as small_gemm_acc.
template <bool kTransA = false>
inline void small_gemm_bf16_acc(float* C, const float* A, const float* B, int64_t M, int64_t N, int64_t K, int64_t lda,
                                int64_t ldb, int64_t ldc, unsigned tri = kFull) {
  using namespace bf16_detail;
  if (M <= 0 || N <= 0 || K <= 0) return;
  Panels& pn = tls_panels;
  const int64_t P = (K + 1) / 2, nb = padded_cols(N);
  uint32_t* b = pn.grow(pn.b, P * nb);
  pack_pairs_by_column(b, B, K, N, ldb, nb);
  // op(A)'s word (i, p) at a[i * ar + p * ap]: a transposed A (K x M) packs like B.
  int64_t ar, ap;
  uint32_t* a;
  if (kTransA) {
    const int64_t na = padded_cols(M);
    a = pn.grow(pn.a, P * na);
    pack_pairs_by_column(a, A, K, M, lda, na);
    ar = 1, ap = na;
  } else {
    a = pn.grow(pn.a, M * P);
    pack_pairs_by_row(a, A, M, K, lda, P);
    ar = P, ap = 1;
  }
  for (int64_t i = 0; i < M; i += 8) {
    const int mr = int(M - i < 8 ? M - i : 8);
    const int64_t k0 = tri & kUpperA ? (i < K ? i : K) : 0;
    const int64_t k1 = tri & kLowerA ? (i + mr < K ? i + mr : K) : K;
    const int64_t n1 = tri & kLowerC ? (i + mr < N ? i + mr : N) : N;
    const int64_t p0 = k0 / 2, p1 = (k1 + 1) / 2;
    if (p1 > p0 && n1 > 0) kStrips[mr](C + i * ldc, a + i * ar, ar, ap, b, nb, n1, p0, p1, ldc);
  }
}
#endif

// small_gemm_bf16_acc where `bf16` asks for it and the build has it, else small_gemm_acc.
template <bool kTransA = false>
inline void small_gemm_acc_in(bool bf16, float* C, const float* A, const float* B, int64_t M, int64_t N, int64_t K,
                              int64_t lda, int64_t ldb, int64_t ldc, unsigned tri = kFull) {
#if defined(__AVX512BF16__)
  if (bf16) return small_gemm_bf16_acc<kTransA>(C, A, B, M, N, K, lda, ldb, ldc, tri);
#endif
  (void)bf16;
  small_gemm_acc<kTransA>(C, A, B, M, N, K, lda, ldb, ldc, tri);
}

}  // namespace mt::simd
