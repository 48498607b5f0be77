// kernels_simd_test.cpp — the shared vector blocks of kernels/cpu/simd.h against plain loops: the
// register transpose (data movement: exactly the element loop), and the small GEMM's triangular
// forms (the skipped terms are exact zeros, so every wanted entry equals the full product's); the
// bf16 small GEMM (small_gemm_bf16.h) against an fp64 product of the bf16-rounded operands.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/bf16.h"
#include "kernels/cpu/gated_delta.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/small_gemm_bf16.h"

namespace mt {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

TEST(SimdTranspose, EqualsTheElementLoopForEveryShape) {
  // Whole register tiles, ragged edges and both together, with padded leading dimensions.
  for (int64_t R : {1, 7, 8, 15, 16, 17, 33, 64})
    for (int64_t C : {1, 8, 9, 16, 31, 32, 48}) {
      const int64_t ld_in = C + 3, ld_out = R + 5;
      const std::vector<float> in = random_floats(size_t(R * ld_in), uint32_t(R * 100 + C));
      std::vector<float> got(size_t(C * ld_out), -7.0f), want = got;
      for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < C; ++c) want[size_t(c * ld_out + r)] = in[size_t(r * ld_in + c)];
      simd::transpose(got.data(), in.data(), R, C, ld_in, ld_out);
      ASSERT_EQ(got, want) << R << " x " << C;  // padding untouched too
    }
}

// A (M x K) with zeros outside the triangle `tri` names.
std::vector<float> triangular(int64_t M, int64_t K, unsigned tri, uint32_t seed) {
  std::vector<float> a = random_floats(size_t(M * K), seed);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k)
      if (((tri & simd::kLowerA) && k > i) || ((tri & simd::kUpperA) && k < i)) a[size_t(i * K + k)] = 0.0f;
  return a;
}

TEST(SimdSmallGemm, TriangularFormsSkipOnlyZeros) {
  const unsigned forms[] = {simd::kLowerA, simd::kUpperA, simd::kLowerC, simd::kLowerA | simd::kLowerC,
                            simd::kUpperA | simd::kLowerC};
  for (int64_t n : {1, 5, 8, 13, 64})
    for (int64_t N : {n, int64_t(40)})
      for (unsigned tri : forms) {
        if ((tri & simd::kLowerC) && N != n) continue;  // a triangle of C needs a square C
        SCOPED_TRACE(testing::Message() << "n " << n << " N " << N << " form " << tri);
        const std::vector<float> A = triangular(n, n, tri, uint32_t(n + tri));
        const std::vector<float> B = random_floats(size_t(n * N), uint32_t(7 * n + N));
        std::vector<float> full = random_floats(size_t(n * N), 99), part = full;  // accumulated into
        simd::small_gemm_acc(full.data(), A.data(), B.data(), n, N, n, n, N, N);
        simd::small_gemm_acc(part.data(), A.data(), B.data(), n, N, n, n, N, N, tri);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < N; ++j) {
            if ((tri & simd::kLowerC) && j > i) continue;  // not wanted
            ASSERT_EQ(part[size_t(i * N + j)], full[size_t(i * N + j)]) << i << ", " << j;
          }
      }
}

TEST(SimdSmallGemm, EqualsAnFmaChainInKOrder) {
  // Each output is C's value plus its K terms, one fused multiply-add each in k order, on every column
  // block (two vectors, one vector, a masked tail) and strip (8 rows and the tails).
  for (int64_t M : {1, 7, 8, 13})
    for (int64_t N : {1, 8, 16, 17, 40, 64})
      for (int64_t K : {1, 5, 64}) {
        SCOPED_TRACE(testing::Message() << "M " << M << " N " << N << " K " << K);
        const std::vector<float> A = random_floats(size_t(M * K), uint32_t(M * 7 + K));
        const std::vector<float> B = random_floats(size_t(K * N), uint32_t(N * 5 + K));
        std::vector<float> got = random_floats(size_t(M * N), 3), want = got;
        simd::small_gemm_acc(got.data(), A.data(), B.data(), M, N, K, K, N, N);
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j)
            for (int64_t k = 0; k < K; ++k)
              want[size_t(i * N + j)] = std::fma(A[size_t(i * K + k)], B[size_t(k * N + j)], want[size_t(i * N + j)]);
        ASSERT_EQ(got, want);
      }
}

TEST(SimdSmallGemm, TransposedAReadInPlaceEqualsATransposedCopy) {
  // Every form, M != K too (the non-square products of the gated-delta chunk), and a row
  // length past M (lda > M): the same multiply-adds in the same order, so the same bits.
  const unsigned forms[] = {simd::kFull, simd::kLowerA, simd::kUpperA, simd::kLowerC, simd::kUpperA | simd::kLowerC};
  for (int64_t M : {1, 7, 8, 13, 64})
    for (int64_t K : {M, int64_t(24)})
      for (unsigned tri : forms) {
        if (tri != simd::kFull && K != M) continue;  // the triangular forms are of square factors
        const int64_t N = tri & simd::kLowerC ? M : 40, lda = M + 3;
        SCOPED_TRACE(testing::Message() << "M " << M << " K " << K << " form " << tri);
        const std::vector<float> At = random_floats(size_t(K * lda), uint32_t(M + K + tri));  // (K, M) in rows of lda
        std::vector<float> A(size_t(M * K));
        for (int64_t k = 0; k < K; ++k)
          for (int64_t m = 0; m < M; ++m) A[size_t(m * K + k)] = At[size_t(k * lda + m)];
        const std::vector<float> B = random_floats(size_t(K * N), uint32_t(3 * K + N));
        std::vector<float> copy = random_floats(size_t(M * N), 17), in_place = copy;
        simd::small_gemm_acc(copy.data(), A.data(), B.data(), M, N, K, K, N, N, tri);
        simd::small_gemm_acc<true>(in_place.data(), At.data(), B.data(), M, N, K, lda, N, N, tri);
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            if ((tri & simd::kLowerC) && j > i) continue;  // not written in full
            ASSERT_EQ(in_place[size_t(i * N + j)], copy[size_t(i * N + j)]) << i << ", " << j;
          }
      }
}

#if defined(__AVX512BF16__)
float round_bf16(float x) { return bf16_to_f32(f32_to_bf16(x)); }

TEST(SimdSmallGemmBf16, EqualsTheProductOfRoundedOperands) {
  // Odd and even K (a padded last pair), strips of 8 and their tails, columns past one 32-wide
  // block, every triangular form, A as stored and transposed (rows of lda > M).
  const unsigned forms[] = {simd::kFull,
                            simd::kLowerA,
                            simd::kUpperA,
                            simd::kLowerC,
                            simd::kLowerA | simd::kLowerC,
                            simd::kUpperA | simd::kLowerC};
  for (bool trans : {false, true})
    for (int64_t M : {1, 7, 8, 13, 64})
      for (int64_t K : {M, int64_t(1), int64_t(24), int64_t(37)})
        for (unsigned tri : forms) {
          if (tri != simd::kFull && K != M) continue;  // the triangular forms are of square factors
          const int64_t N = tri & simd::kLowerC ? M : 45, lda = trans ? M + 3 : K + 2;
          SCOPED_TRACE(testing::Message() << "trans " << trans << " M " << M << " K " << K << " form " << tri);
          const std::vector<float> A = triangular(M, K, tri & (simd::kLowerA | simd::kUpperA), uint32_t(M + K + tri));
          std::vector<float> Ast(size_t((trans ? K : M) * lda), 5.0f);  // A stored, padding never read
          for (int64_t i = 0; i < M; ++i)
            for (int64_t k = 0; k < K; ++k) Ast[size_t(trans ? k * lda + i : i * lda + k)] = A[size_t(i * K + k)];
          const std::vector<float> B = random_floats(size_t(K * N), uint32_t(3 * K + N));
          const std::vector<float> C0 = random_floats(size_t(M * N), 17);
          std::vector<float> got = C0;
          if (trans)
            simd::small_gemm_bf16_acc<true>(got.data(), Ast.data(), B.data(), M, N, K, lda, N, N, tri);
          else
            simd::small_gemm_bf16_acc(got.data(), Ast.data(), B.data(), M, N, K, lda, N, N, tri);
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
              if ((tri & simd::kLowerC) && j > i) continue;  // not written in full
              double want = C0[size_t(i * N + j)], mag = std::abs(want);
              for (int64_t k = 0; k < K; ++k) {
                const double t = double(round_bf16(A[size_t(i * K + k)])) * round_bf16(B[size_t(k * N + j)]);
                want += t, mag += std::abs(t);
              }
              // Exact products, fp32 sums: at most K + 1 roundings of partial sums bounded by mag.
              ASSERT_NEAR(got[size_t(i * N + j)], want, double(K + 1) * 6e-8 * mag) << i << ", " << j;
            }
        }
}
#endif

TEST(GatedDeltaDecays, LowerTriangleOfExponentialsOfDifferences) {
  const int64_t n = 37;  // two vector widths and a tail
  const std::vector<float> g = random_floats(size_t(n), 5);
  std::vector<float> gam = g;
  float acc = 0.0f;
  for (int64_t i = 0; i < n; ++i) gam[size_t(i)] = acc += -std::fabs(g[size_t(i)]);
  std::vector<float> Mx(size_t(n * n), -1.0f);
  gated_delta_decays(Mx.data(), gam.data(), n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const float got = Mx[size_t(i * n + j)];
      if (j > i) {
        ASSERT_EQ(got, 0.0f);
        continue;
      }
      const double want = std::exp(double(gam[size_t(i)] - gam[size_t(j)]));
      ASSERT_NEAR(got, want, 4e-7 * want) << i << ", " << j;
    }
}

TEST(GatedDeltaUtInverse, InvertsIPlusAStrictlyLower) {
  for (int64_t n : {1, 9, 64, 70}) {  // one register block of columns, and more
    std::vector<float> A = random_floats(size_t(n * n), uint32_t(n));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) A[size_t(i * n + j)] = j < i ? 0.1f * A[size_t(i * n + j)] : 0.0f;
    std::vector<float> Tm(size_t(n * n), -3.0f);
    gated_delta_ut_inverse(Tm.data(), A.data(), n);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < n; ++c) {  // ((I + A) Tm)_ic = delta_ic
        double s = Tm[size_t(i * n + c)];
        for (int64_t j = 0; j < i; ++j) s += double(A[size_t(i * n + j)]) * Tm[size_t(j * n + c)];
        ASSERT_NEAR(s, i == c ? 1.0 : 0.0, 1e-5) << "n " << n << " at " << i << ", " << c;
        if (c > i) ASSERT_EQ(Tm[size_t(i * n + c)], 0.0f);
      }
  }
}

}  // namespace
}  // namespace mt
