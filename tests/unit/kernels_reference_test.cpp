// kernels_reference_test.cpp — forward results of the CPU kernels against
// plain reference loops in double: gemm (every transpose combination, padded
// leading dims, beta 0/1, fp32 and bf16), attention (window, GQA) and its cost
// model, router top-k selection and losses, MoE slot assignment, AdamW, and
// the head layout shuffles.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "core/rng.h"
#include "kernels/cpu/adamw.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_matmul.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/heads.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/moe_dispatch.h"
#include "kernels/cpu/router.h"
#include "support/compare.h"
#include "support/random.h"

namespace mt {
namespace {

using testing::kBf16Tol;
using testing::randn;
using testing::relative_error;

uint32_t rand_u32(uint64_t seed, uint64_t i) { return testing::rand_u32(seed, 0xfeed, i); }

template <class... A>
std::string cat(const A&... a) {
  std::ostringstream s;
  (s << ... << a);
  return s.str();
}

// ---------------------------------------------------------------- gemm

struct GemmCase {
  int64_t M, N, K;
  Trans ta, tb;
  int64_t pad;  // 0: dense leading dims (passed as 0); > 0: every ld padded by this
  float beta;
  MatmulPrecision p;
};

std::string gemm_name(const GemmCase& c) {
  return cat(c.M, "x", c.N, "x", c.K, c.ta == Trans::kYes ? "_T" : "_N", c.tb == Trans::kYes ? "T" : "N",
             c.pad ? "_padded" : "_dense", c.beta == 0.0f ? "_beta0" : "_beta1",
             c.p == MatmulPrecision::kFp32 ? "_fp32" : "_bf16");
}

std::vector<GemmCase> gemm_cases() {
  std::vector<GemmCase> v;
  // The first and last two take the skinny path (a dimension <= 32, fp32), the
  // others oneDNN.
  const int64_t shapes[][3] = {{7, 5, 3}, {33, 17, 65}, {64, 48, 128}, {100, 16, 200}, {16, 96, 333}};
  for (auto& s : shapes)
    for (Trans ta : {Trans::kNo, Trans::kYes})
      for (Trans tb : {Trans::kNo, Trans::kYes})
        for (int64_t pad : {0, 3})
          for (float beta : {0.0f, 1.0f})
            for (MatmulPrecision p : {MatmulPrecision::kFp32, MatmulPrecision::kBf16})
              v.push_back({s[0], s[1], s[2], ta, tb, pad, beta, p});
  return v;
}

class GemmReference : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmReference, MatchesDoubleLoops) {
  const GemmCase c = GetParam();
  const int64_t a_rows = c.ta == Trans::kNo ? c.M : c.K, a_cols = c.ta == Trans::kNo ? c.K : c.M;
  const int64_t b_rows = c.tb == Trans::kNo ? c.K : c.N, b_cols = c.tb == Trans::kNo ? c.N : c.K;
  const int64_t lda = a_cols + c.pad, ldb = b_cols + c.pad, ldc = c.N + c.pad;
  auto A = randn(a_rows * lda, 1.0f, 1), B = randn(b_rows * ldb, 1.0f, 2), C0 = randn(c.M * ldc, 1.0f, 3);
  // Padding columns of C carry a sentinel that must survive.
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t j = c.N; j < ldc; ++j) C0[i * ldc + j] = 777.0f;
  auto opA = [&](int64_t i, int64_t k) { return c.ta == Trans::kNo ? A[i * lda + k] : A[k * lda + i]; };
  auto opB = [&](int64_t k, int64_t j) { return c.tb == Trans::kNo ? B[k * ldb + j] : B[j * ldb + k]; };
  auto rb = [](float f) { return bf16_to_f32(f32_to_bf16(f)); };

  std::vector<float> C = C0;
  const GemmShape s{c.M, c.N, c.K, c.ta, c.tb, c.pad ? lda : 0, c.pad ? ldb : 0, c.pad ? ldc : 0};
  gemm(C.data(), A.data(), B.data(), s, c.beta, c.p);

  double worst = 0.0;
  for (int64_t i = 0; i < c.M; ++i) {
    for (int64_t j = 0; j < c.N; ++j) {
      double ref = 0, ref_rounded = 0, mag = 0, mag_rounded = 0;
      for (int64_t k = 0; k < c.K; ++k) {
        const double a = opA(i, k), b = opB(k, j), ar = rb(opA(i, k)), br = rb(opB(k, j));
        ref += a * b;
        mag += std::abs(a * b);
        ref_rounded += ar * br;
        mag_rounded += std::abs(ar * br);
      }
      const double c0 = c.beta == 1.0f ? double(C0[i * ldc + j]) : 0.0;
      const double got = C[i * ldc + j];
      if (c.p == MatmulPrecision::kFp32) {
        ASSERT_NEAR(got, c0 + ref, 1e-5 * (mag + std::abs(c0))) << "C[" << i << "," << j << "]";
      } else {
        // bf16 operands (round to nearest even) with fp32 accumulation: tight
        // against the rounded-operand product, ~1e-2 against the fp32 one.
        ASSERT_NEAR(got, c0 + ref_rounded, 1e-5 * (mag_rounded + std::abs(c0))) << "C[" << i << "," << j << "]";
        ASSERT_NEAR(got, c0 + ref, 1e-2 * (mag + std::abs(c0))) << "C[" << i << "," << j << "]";
      }
      worst = std::max(worst, std::abs(got - c0 - ref) / (mag + std::abs(c0)));
    }
    for (int64_t j = c.N; j < ldc; ++j) ASSERT_EQ(C[i * ldc + j], 777.0f) << "ldc padding written";
  }
  // bf16 must actually round (a fp32 result hiding behind the bf16 flag would pass the above).
  if (c.p == MatmulPrecision::kBf16 && c.K > 3) {
    EXPECT_GT(worst, 1e-6) << "bf16 result looks fp32";
  }
}

INSTANTIATE_TEST_SUITE_P(Table, GemmReference, ::testing::ValuesIn(gemm_cases()),
                         [](const auto& i) { return gemm_name(i.param); });

TEST(GemmReference, LinearFormsAndEmptyK) {
  const int64_t M = 9, N = 6, K = 13;
  auto x = randn(M * K, 1.0f, 5), W = randn(N * K, 1.0f, 6), dy = randn(M * N, 1.0f, 7);
  std::vector<float> y(M * N), dx(M * K), dW = randn(N * K, 1.0f, 8);
  const auto dW0 = dW;
  linear_forward(y.data(), x.data(), W.data(), M, N, K, MatmulPrecision::kFp32);
  linear_backward_input(dx.data(), dy.data(), W.data(), M, N, K, 0.0f, MatmulPrecision::kFp32);
  linear_backward_weight(dW.data(), dy.data(), x.data(), M, N, K, MatmulPrecision::kFp32);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += double(x[m * K + k]) * W[n * K + k];
      EXPECT_NEAR(y[m * N + n], s, 1e-5 * (1 + std::abs(s)));
    }
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) {
      double s = 0;
      for (int64_t n = 0; n < N; ++n) s += double(dy[m * N + n]) * W[n * K + k];
      EXPECT_NEAR(dx[m * K + k], s, 1e-5 * (1 + std::abs(s)));
    }
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      double s = dW0[n * K + k];
      for (int64_t m = 0; m < M; ++m) s += double(dy[m * N + n]) * x[m * K + k];
      EXPECT_NEAR(dW[n * K + k], s, 1e-5 * (1 + std::abs(s))) << "dW accumulates";
    }
  // K = 0: beta 0 writes zeros (respecting ldc), beta 1 leaves C alone.
  std::vector<float> C(3 * 5, 4.0f);
  gemm(C.data(), nullptr, nullptr, GemmShape{3, 4, 0, Trans::kNo, Trans::kNo, 0, 0, 5}, 1.0f,
       MatmulPrecision::kFp32);
  for (float v : C) EXPECT_EQ(v, 4.0f);
  gemm(C.data(), nullptr, nullptr, GemmShape{3, 4, 0, Trans::kNo, Trans::kNo, 0, 0, 5}, 0.0f,
       MatmulPrecision::kFp32);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j) EXPECT_EQ(C[i * 5 + j], j < 4 ? 0.0f : 4.0f);
}

// The skinny kernel sums each output over k in order, one fused multiply-add
// at a time, whatever its blocking: bit for bit an fma loop, on the router's
// weight-gradient shape (K = tokens, summed in L2-sized slices, A read
// transposed in place; one column block, and three, ragged, that the
// threads share), its input gradient's (K = experts, blocks of rows and
// columns), short ragged ones, and a transposed A whose rows
// end in a partial strip and block.
TEST(GemmReference, SkinnyProductIsAnFmaLoopInKOrder) {
  for (const GemmCase& c : {GemmCase{16, 96, 1100, Trans::kYes, Trans::kNo, 0, 1.0f, MatmulPrecision::kFp32},
                            GemmCase{16, 300, 700, Trans::kYes, Trans::kNo, 0, 0.0f, MatmulPrecision::kFp32},
                            GemmCase{100, 300, 16, Trans::kNo, Trans::kNo, 0, 1.0f, MatmulPrecision::kFp32},
                            GemmCase{40, 24, 300, Trans::kNo, Trans::kNo, 0, 0.0f, MatmulPrecision::kFp32},
                            GemmCase{45, 20, 300, Trans::kYes, Trans::kNo, 0, 0.0f, MatmulPrecision::kFp32}}) {
    SCOPED_TRACE(gemm_name(c));
    const auto A = randn(c.M * c.K, 1.0f, 21), B = randn(c.K * c.N, 1.0f, 22), C0 = randn(c.M * c.N, 1.0f, 23);
    std::vector<float> C = C0;
    gemm(C.data(), A.data(), B.data(), GemmShape{c.M, c.N, c.K, c.ta, c.tb}, c.beta, c.p);
    for (int64_t i = 0; i < c.M; ++i)
      for (int64_t j = 0; j < c.N; ++j) {
        float acc = c.beta == 0.0f ? 0.0f : C0[i * c.N + j];
        for (int64_t k = 0; k < c.K; ++k)
          acc = std::fma(c.ta == Trans::kNo ? A[i * c.K + k] : A[k * c.M + i], B[k * c.N + j], acc);
        ASSERT_EQ(acc, C[i * c.N + j]) << i << "," << j;
      }
  }
}

// linear_backward rounds dy once for both products: the results are those of
// the two separate calls, bit for bit, in both precisions, for beta 0 and 1,
// for shapes oneDNN takes and (fp32) the skinny kernel takes, and with dx skipped.
TEST(GemmReference, LinearBackwardEqualsItsTwoProducts) {
  struct Case {
    int64_t M, N, K;
  };
  for (const Case& c : {Case{70, 48, 40}, Case{64, 16, 96}})
    for (MatmulPrecision p : {MatmulPrecision::kFp32, MatmulPrecision::kBf16})
      for (float beta : {0.0f, 1.0f}) {
        SCOPED_TRACE(::testing::Message() << c.M << "x" << c.N << "x" << c.K << " bf16 " << (p == MatmulPrecision::kBf16)
                                        << " beta " << beta);
        const auto x = randn(c.M * c.K, 1.0f, 11), W = randn(c.N * c.K, 1.0f, 12), dy = randn(c.M * c.N, 1.0f, 13);
        const auto dx0 = randn(c.M * c.K, 1.0f, 14), dW0 = randn(c.N * c.K, 1.0f, 15);
        auto dx1 = dx0, dW1 = dW0, dx2 = dx0, dW2 = dW0, dW3 = dW0;
        linear_backward_input(dx1.data(), dy.data(), W.data(), c.M, c.N, c.K, beta, p);
        linear_backward_weight(dW1.data(), dy.data(), x.data(), c.M, c.N, c.K, p);
        linear_backward(dx2.data(), dW2.data(), dy.data(), x.data(), W.data(), c.M, c.N, c.K, beta, p);
        linear_backward(nullptr, dW3.data(), dy.data(), x.data(), W.data(), c.M, c.N, c.K, beta, p);
        EXPECT_EQ(0, std::memcmp(dx1.data(), dx2.data(), dx1.size() * sizeof(float)));
        EXPECT_EQ(0, std::memcmp(dW1.data(), dW2.data(), dW1.size() * sizeof(float)));
        EXPECT_EQ(0, std::memcmp(dW1.data(), dW3.data(), dW1.size() * sizeof(float)));
        EXPECT_NE(0, std::memcmp(dW0.data(), dW2.data(), dW0.size() * sizeof(float)));  // it did something
      }
}

// ---------------------------------------------------------------- attention

struct AttnCase {
  int64_t B, H, Hkv, T, Dh, window;
};

std::vector<AttnCase> attn_cases() {
  std::vector<AttnCase> v;
  for (int64_t T : {1, 5, 19, 37, 70})
    for (int64_t w : std::set<int64_t>{0, 1, 3, 16, 17, T, T + 5})
      for (int64_t g : {1, 2, 4}) v.push_back({2, 4, 4 / g, T, T == 70 ? 16 : 8, w});
  return v;
}

class AttentionReference : public ::testing::TestWithParam<AttnCase> {};

TEST_P(AttentionReference, MatchesNaiveMaskedSoftmax) {
  const AttnCase c = GetParam();
  const AttentionDims d{c.B, c.H, c.Hkv, c.T, c.Dh, c.window};
  const int64_t T = c.T, Dh = c.Dh;
  auto q = randn(c.B * c.H * T * Dh, 1.5f, 11), k = randn(c.B * c.Hkv * T * Dh, 1.5f, 12),
       v = randn(c.B * c.Hkv * T * Dh, 1.0f, 13);
  std::vector<float> o(q.size()), lse(c.B * c.H * T);
  attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), d);
  const double scale = 1.0 / std::sqrt(double(Dh));
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.H; ++h) {
      const int64_t kvh = h / (c.H / c.Hkv);
      const float* qh = &q[(b * c.H + h) * T * Dh];
      const float* kh = &k[(b * c.Hkv + kvh) * T * Dh];
      const float* vh = &v[(b * c.Hkv + kvh) * T * Dh];
      for (int64_t i = 0; i < T; ++i) {
        // Naive: scores over all T keys, masked outside the causal window.
        std::vector<double> s(T, -INFINITY);
        double m = -INFINITY;
        for (int64_t j = 0; j < T; ++j) {
          const bool visible = j <= i && (c.window <= 0 || i - j < c.window);
          if (!visible) continue;
          double dot = 0;
          for (int64_t e = 0; e < Dh; ++e) dot += double(qh[i * Dh + e]) * kh[j * Dh + e];
          s[j] = dot * scale;
          m = std::max(m, s[j]);
        }
        double l = 0;
        for (int64_t j = 0; j < T; ++j) l += std::exp(s[j] - m);
        const double ref_lse = m + std::log(l);
        EXPECT_NEAR(lse[(b * c.H + h) * T + i], ref_lse, 1e-5 * (1 + std::abs(ref_lse))) << "lse b" << b << " h" << h << " i" << i;
        for (int64_t e = 0; e < Dh; ++e) {
          double ref = 0;
          for (int64_t j = 0; j < T; ++j) ref += std::exp(s[j] - ref_lse) * vh[j * Dh + e];
          ASSERT_NEAR(o[((b * c.H + h) * T + i) * Dh + e], ref, 1e-5)
              << "o b" << b << " h" << h << " i" << i << " e" << e;
        }
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Table, AttentionReference, ::testing::ValuesIn(attn_cases()),
                         [](const auto& i) {
                           return cat("T", i.param.T, "_w", i.param.window, "_H", i.param.H, "kv", i.param.Hkv);
                         });

// Token-major o and dout ((B, T, H, Dv), as the output projection reads them)
// give the head-major results bit for bit, forward and backward, with Dv != Dh.
TEST_P(AttentionReference, TokenMajorOutputIsTheSameArithmetic) {
  const AttnCase c = GetParam();
  AttentionDims d{c.B, c.H, c.Hkv, c.T, c.Dh, c.window, c.Dh + 3};
  const int64_t T = c.T, Dh = c.Dh, Dv = d.v_dim();
  const auto q = randn(c.B * c.H * T * Dh, 1.5f, 21), k = randn(c.B * c.Hkv * T * Dh, 1.5f, 22),
             v = randn(c.B * c.Hkv * T * Dv, 1.0f, 23), dout = randn(c.B * c.H * T * Dv, 1.0f, 24);
  // Head-major index of token-major element (b, t, h, e), and the permuted dout.
  auto hm = [&](int64_t b, int64_t t, int64_t h, int64_t e) { return ((b * c.H + h) * T + t) * Dv + e; };
  auto tm = [&](int64_t b, int64_t t, int64_t h, int64_t e) { return ((b * T + t) * c.H + h) * Dv + e; };
  std::vector<float> dout_tm(dout.size());
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < c.H; ++h)
        for (int64_t e = 0; e < Dv; ++e) dout_tm[tm(b, t, h, e)] = dout[hm(b, t, h, e)];
  struct Out {
    std::vector<float> o, lse, dq, dk, dv;
  };
  auto run = [&](bool token_major) {
    d.token_major_out = token_major;
    Out r{std::vector<float>(dout.size()), std::vector<float>(c.B * c.H * T), std::vector<float>(q.size()),
          std::vector<float>(k.size()), std::vector<float>(v.size())};
    attention_forward(r.o.data(), r.lse.data(), q.data(), k.data(), v.data(), d);
    attention_backward(r.dq.data(), r.dk.data(), r.dv.data(), token_major ? dout_tm.data() : dout.data(), q.data(),
                       k.data(), v.data(), r.o.data(), r.lse.data(), d);
    return r;
  };
  const Out a = run(false), b = run(true);
  for (int64_t bb = 0; bb < c.B; ++bb)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < c.H; ++h)
        for (int64_t e = 0; e < Dv; ++e) ASSERT_EQ(a.o[hm(bb, t, h, e)], b.o[tm(bb, t, h, e)]);
  EXPECT_EQ(a.lse, b.lse);
  EXPECT_EQ(a.dq, b.dq);
  EXPECT_EQ(a.dk, b.dk);
  EXPECT_EQ(a.dv, b.dv);
}

// The matmul-tiled kernel (attention_matmul.h) against the blocked fp32
// kernel, forward and backward, token-major output with Dv != Dh. In fp32 the
// two differ only in summation order. In bf16 the operands are rounded to 8
// significant bits: every output stays within kBf16Tol of the fp32 kernel,
// relative to the largest magnitude of that output (at least 1).
struct AttnOut {
  std::vector<float> o, lse, dq, dk, dv;
};

AttnOut run_attention(const AttnCase& c, bool matmul, MatmulPrecision p) {
  AttentionDims d{c.B, c.H, c.Hkv, c.T, c.Dh, c.window, c.Dh + 8};
  d.token_major_out = true;
  const int64_t T = c.T, Dv = d.v_dim();
  const auto q = randn(c.B * c.H * T * c.Dh, 1.5f, 31), k = randn(c.B * c.Hkv * T * c.Dh, 1.5f, 32),
             v = randn(c.B * c.Hkv * T * Dv, 1.0f, 33), dout = randn(c.B * c.H * T * Dv, 1.0f, 34);
  AttnOut r{std::vector<float>(dout.size()), std::vector<float>(c.B * c.H * T), std::vector<float>(q.size()),
            std::vector<float>(k.size()), std::vector<float>(v.size())};
  if (matmul) {
    attention_matmul_forward(r.o.data(), r.lse.data(), q.data(), k.data(), v.data(), d, p);
    attention_matmul_backward(r.dq.data(), r.dk.data(), r.dv.data(), dout.data(), q.data(), k.data(), v.data(),
                              r.o.data(), r.lse.data(), d, p);
  } else {
    attention_forward(r.o.data(), r.lse.data(), q.data(), k.data(), v.data(), d);
    attention_backward(r.dq.data(), r.dk.data(), r.dv.data(), dout.data(), q.data(), k.data(), v.data(),
                       r.o.data(), r.lse.data(), d);
  }
  return r;
}

class AttentionMatmul : public ::testing::TestWithParam<AttnCase> {};

TEST_P(AttentionMatmul, Fp32IsTheBlockedKernelUpToSummationOrder) {
  const AttnOut ref = run_attention(GetParam(), false, MatmulPrecision::kFp32);
  const AttnOut got = run_attention(GetParam(), true, MatmulPrecision::kFp32);
  EXPECT_LT(relative_error(got.o, ref.o), 2e-6);
  EXPECT_LT(relative_error(got.lse, ref.lse), 2e-6);
  EXPECT_LT(relative_error(got.dq, ref.dq), 2e-5);
  EXPECT_LT(relative_error(got.dk, ref.dk), 2e-5);
  EXPECT_LT(relative_error(got.dv, ref.dv), 2e-5);
}

TEST_P(AttentionMatmul, Bf16IsWithinItsToleranceOfFp32) {
  const AttnOut ref = run_attention(GetParam(), false, MatmulPrecision::kFp32);
  const AttnOut got = run_attention(GetParam(), true, MatmulPrecision::kBf16);
  const double eo = relative_error(got.o, ref.o), eq = relative_error(got.dq, ref.dq),
               ek = relative_error(got.dk, ref.dk), ev = relative_error(got.dv, ref.dv);
  EXPECT_LT(eo, kBf16Tol);
  EXPECT_LT(relative_error(got.lse, ref.lse), kBf16Tol);
  EXPECT_LT(eq, kBf16Tol);
  EXPECT_LT(ek, kBf16Tol);
  EXPECT_LT(ev, kBf16Tol);
  // It did round: bf16 operands move the result by more than fp32 reordering.
  if (GetParam().T > 1) EXPECT_GT(std::max({eo, eq, ek, ev}), 1e-4);
}

// A bf16 step stores the output in the form Wo's GEMMs read (docs/kernels.md):
// the kernel writes exactly its fp32 output rounded, and its backward, given
// that stored output, computes what it computes from the same rounded values
// held in fp32, bit for bit.
// A bf16 case of the tiled kernel: token-major output, a value width other
// than the key width, random q, k, v and output gradient from `seed` on.
struct Bf16AttnInputs {
  MatmulPrecision p = MatmulPrecision::kBf16;
  OperandForm f = operand_form(MatmulPrecision::kBf16);
  AttentionDims d;
  int64_t n;  // output elements
  std::vector<float> q, k, v, dout;
  Bf16AttnInputs(const AttnCase& c, uint64_t seed) : d{c.B, c.H, c.Hkv, c.T, c.Dh, c.window, c.Dh + 8} {
    d.token_major_out = true;
    n = c.B * c.H * c.T * d.v_dim();
    q = randn(c.B * c.H * c.T * c.Dh, 1.5f, seed);
    k = randn(c.B * c.Hkv * c.T * c.Dh, 1.5f, seed + 1);
    v = randn(c.B * c.Hkv * c.T * d.v_dim(), 1.0f, seed + 2);
    dout = randn(n, 1.0f, seed + 3);
  }
};

TEST_P(AttentionMatmul, OutputStoredInTheGemmFormIsItsFp32OutputRounded) {
  const Bf16AttnInputs in(GetParam(), 31);
  const auto& [p, f, d, n, q, k, v, dout] = in;
  std::vector<float> o(n), lse(d.B * d.H * d.T), lse2(lse.size()), stored(size_t(operand_floats(n, f)));
  attention_matmul_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), d, p);
  attention_matmul_forward(stored.data(), f, lse2.data(), QkvOperands{q.data(), k.data(), v.data()}, d, p);
  EXPECT_EQ(lse, lse2);
  std::vector<float> rounded(n);
  round_f32_to_bf16_span(rounded.data(), o.data(), n);
  std::vector<float> widened(n);
  for (int64_t i = 0; i < n; ++i)
    widened[i] = f == OperandForm::kBf16 ? bf16_to_f32(reinterpret_cast<const bf16*>(stored.data())[i]) : stored[i];
  ASSERT_EQ(widened, rounded);
  std::vector<float> dq1(q.size()), dk1(k.size()), dv1(v.size()), dq2(q.size()), dk2(k.size()), dv2(v.size());
  attention_matmul_backward(dq1.data(), dk1.data(), dv1.data(), dout.data(), q.data(), k.data(), v.data(),
                            rounded.data(), lse.data(), d, p);
  attention_matmul_backward(dq2.data(), dk2.data(), dv2.data(), dout.data(), QkvOperands{q.data(), k.data(), v.data()},
                            stored.data(), f, lse.data(), d, p);
  EXPECT_EQ(dq1, dq2);
  EXPECT_EQ(dk1, dk2);
  EXPECT_EQ(dv1, dv2);
}

// q, k, v written in the bf16 step's operand form by their producer are read
// in place; the kernel computes exactly what it computes when it rounds the
// same fp32 values per tile itself, forward and backward.
TEST_P(AttentionMatmul, InputsHeldInTheGemmFormGiveTheSameBits) {
  const Bf16AttnInputs in(GetParam(), 41);
  const auto& [p, f, d, n, q, k, v, dout] = in;
  auto held = [&](const std::vector<float>& x) {
    std::vector<float> h(size_t(operand_floats(int64_t(x.size()), f)));
    write_operand(h.data(), 0, x.data(), int64_t(x.size()), f);
    return h;
  };
  const auto qh = held(q), kh = held(k), vh = held(v);
  const QkvOperands fp32{q.data(), k.data(), v.data()}, gemm_form{qh.data(), kh.data(), vh.data(), f};
  std::vector<float> o1(n), o2(n), lse1(d.B * d.H * d.T), lse2(lse1.size());
  attention_matmul_forward(o1.data(), OperandForm::kFp32, lse1.data(), fp32, d, p);
  attention_matmul_forward(o2.data(), OperandForm::kFp32, lse2.data(), gemm_form, d, p);
  EXPECT_EQ(o1, o2);
  EXPECT_EQ(lse1, lse2);
  std::vector<float> dq1(q.size()), dk1(k.size()), dv1(v.size()), dq2(q.size()), dk2(k.size()), dv2(v.size());
  attention_matmul_backward(dq1.data(), dk1.data(), dv1.data(), dout.data(), fp32, o1.data(), OperandForm::kFp32,
                            lse1.data(), d, p);
  attention_matmul_backward(dq2.data(), dk2.data(), dv2.data(), dout.data(), gemm_form, o1.data(),
                            OperandForm::kFp32, lse1.data(), d, p);
  EXPECT_EQ(dq1, dq2);
  EXPECT_EQ(dk1, dk2);
  EXPECT_EQ(dv1, dv2);
}

INSTANTIATE_TEST_SUITE_P(Table, AttentionMatmul,
                         ::testing::ValuesIn([] {
                           std::vector<AttnCase> v = attn_cases();
                           // Several query tiles, keys aligned below a window band, a ragged last tile.
                           for (int64_t w : {0, 40, 100}) {
                             for (int64_t g : {1, 4}) v.push_back({2, 4, 4 / g, 203, 16, w});
                           }
                           return v;
                         }()),
                         [](const auto& i) {
                           return cat("T", i.param.T, "_w", i.param.window, "_H", i.param.H, "kv", i.param.Hkv);
                         });

TEST(AttentionMatmul, QueryTileStacksAbout128Rows) {
  EXPECT_EQ(attention_matmul_query_tile(1), 64);
  EXPECT_EQ(attention_matmul_query_tile(2), 64);
  EXPECT_EQ(attention_matmul_query_tile(4), 32);
  EXPECT_EQ(attention_matmul_query_tile(8), 32);
}

TEST(AttentionCost, MeanKeysIsOTimesWindow) {
  EXPECT_DOUBLE_EQ(attention_mean_keys(5, 0), 3.0);    // (1+2+3+4+5)/5
  EXPECT_DOUBLE_EQ(attention_mean_keys(5, 3), 2.4);    // (1+2+3+3+3)/5
  EXPECT_DOUBLE_EQ(attention_mean_keys(4, 1), 1.0);
  EXPECT_DOUBLE_EQ(attention_mean_keys(5, 5), 3.0);    // window == T: global
  EXPECT_DOUBLE_EQ(attention_mean_keys(5, 100), 3.0);  // window > T: global
  EXPECT_DOUBLE_EQ(attention_mean_keys(1, 0), 1.0);
  for (int64_t T : {1, 7, 128, 4096})
    for (int64_t w : {1, 2, 16, 512, 4096, 10000}) {
      const int64_t ww = std::min(w, T);
      const double expect = (double(ww) * double(ww + 1) / 2 + double(T - ww) * double(ww)) / double(T);
      EXPECT_DOUBLE_EQ(attention_mean_keys(T, w), expect) << "T " << T << " w " << w;
      EXPECT_LE(attention_mean_keys(T, w), double(w));  // cost O(T * window), not O(T^2)
    }
  EXPECT_DOUBLE_EQ(attention_mean_keys(4096, 0), 4097.0 / 2.0);
}

// ---------------------------------------------------------------- router

TEST(RouterReference, TiesGoToLowerExpertIndex) {
  for (ScoreFn fn : {ScoreFn::kSoftmax, ScoreFn::kSigmoid}) {
    SCOPED_TRACE(fn == ScoreFn::kSoftmax ? "softmax" : "sigmoid");
    const std::vector<float> logits{1, 3, 3, 0, 3, 2,  /* row 2 */ 0, 0, 0, 0, 0, 0};
    for (int64_t K : {1, 2, 3, 4}) {
      const RouterDims d{2, 6, K, fn, false, 2};
      std::vector<int32_t> idx(2 * K);
      std::vector<float> gate(2 * K), scores(12);
      router_topk_forward(idx.data(), gate.data(), scores.data(), logits.data(), nullptr, d);
      const std::vector<int32_t> want0{1, 2, 4, 5};
      for (int64_t k = 0; k < K; ++k) {
        EXPECT_EQ(idx[k], want0[k]) << "K " << K << " k " << k;
        EXPECT_EQ(idx[K + k], k) << "all-equal row, K " << K;
      }
    }
  }
}

TEST(RouterReference, BiasChangesSelectionNotGates) {
  const std::vector<float> logits{2.0f, 1.0f, 0.0f, -1.0f};
  for (bool renorm : {false, true}) {
    SCOPED_TRACE(renorm ? "renormalize" : "plain");
    const RouterDims d{1, 4, 2, ScoreFn::kSoftmax, renorm, 1};
    std::vector<int32_t> idx(2), idx_b(2);
    std::vector<float> gate(2), gate_b(2), s(4), s_b(4);
    router_topk_forward(idx.data(), gate.data(), s.data(), logits.data(), nullptr, d);
    const std::vector<float> bias{0.0f, 0.0f, 10.0f, 5.0f};
    router_topk_forward(idx_b.data(), gate_b.data(), s_b.data(), logits.data(), bias.data(), d);
    EXPECT_EQ(idx, (std::vector<int32_t>{0, 1}));
    EXPECT_EQ(idx_b, (std::vector<int32_t>{2, 3}));
    EXPECT_EQ(0, std::memcmp(s.data(), s_b.data(), sizeof(float) * 4)) << "bias changed the scores";
    const float sum = s[2] + s[3];
    EXPECT_FLOAT_EQ(gate_b[0], renorm ? s[2] / sum : s[2]);
    EXPECT_FLOAT_EQ(gate_b[1], renorm ? s[3] / sum : s[3]);
  }
}

struct RouterCase {
  int64_t K;
  ScoreFn fn;
  bool renorm, bias;
};

class RouterReference : public ::testing::TestWithParam<RouterCase> {};

TEST_P(RouterReference, SelectionGatesAndLosses) {
  const RouterCase c = GetParam();
  const RouterDims d{64, 8, c.K, c.fn, c.renorm, 16};
  auto logits = randn(d.N * d.E, 1.5f, 21), bias = randn(d.E, 0.2f, 22);
  // Quantised logits in some rows make exact score ties.
  for (int64_t n = 0; n < d.N; n += 4)
    for (int64_t e = 0; e < d.E; ++e) logits[n * d.E + e] = std::round(logits[n * d.E + e]);
  const float* b = c.bias ? bias.data() : nullptr;
  std::vector<int32_t> idx(d.N * d.K);
  std::vector<float> gate(d.N * d.K), scores(d.N * d.E);
  router_topk_forward(idx.data(), gate.data(), scores.data(), logits.data(), b, d);
  for (int64_t n = 0; n < d.N; ++n) {
    const float* l = &logits[n * d.E];
    const float* s = &scores[n * d.E];
    double mx = *std::max_element(l, l + d.E), z = 0;
    for (int64_t e = 0; e < d.E; ++e) z += std::exp(double(l[e]) - mx);
    for (int64_t e = 0; e < d.E; ++e) {
      const double ref = c.fn == ScoreFn::kSoftmax ? std::exp(double(l[e]) - mx) / z : 1.0 / (1.0 + std::exp(-double(l[e])));
      ASSERT_NEAR(s[e], ref, 1e-6 * ref + 1e-7) << "score n" << n << " e" << e;
    }
    // Reference ranking on the kernel's own float keys: descending, ties to lower index.
    std::vector<int32_t> order(d.E);
    std::iota(order.begin(), order.end(), 0);
    auto key = [&](int32_t e) { return s[e] + (b ? b[e] : 0.0f); };
    std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return key(x) > key(y); });
    double sum = 0;
    for (int64_t k = 0; k < d.K; ++k) sum += s[order[k]];
    for (int64_t k = 0; k < d.K; ++k) {
      ASSERT_EQ(idx[n * d.K + k], order[k]) << "n " << n << " k " << k;
      const double want = c.renorm ? s[order[k]] / sum : s[order[k]];
      ASSERT_NEAR(gate[n * d.K + k], want, 1e-6 * want) << "gate n " << n << " k " << k;
    }
  }
  // Switch aux loss per group, and z-loss.
  double aux = 0, zl = 0;
  router_losses(&aux, &zl, logits.data(), scores.data(), idx.data(), d);
  const int64_t groups = d.N / d.group;
  double ref_aux = 0, ref_z = 0;
  for (int64_t g = 0; g < groups; ++g) {
    std::vector<double> f(d.E, 0.0), P(d.E, 0.0);
    for (int64_t n = g * d.group; n < (g + 1) * d.group; ++n) {
      for (int64_t k = 0; k < d.K; ++k) f[idx[n * d.K + k]] += 1.0 / double(d.group * d.K);
      double ssum = 0;
      for (int64_t e = 0; e < d.E; ++e) ssum += scores[n * d.E + e];
      for (int64_t e = 0; e < d.E; ++e)
        P[e] += (c.fn == ScoreFn::kSoftmax ? scores[n * d.E + e] : scores[n * d.E + e] / ssum) / double(d.group);
    }
    for (int64_t e = 0; e < d.E; ++e) ref_aux += double(d.E) * f[e] * P[e] / double(groups);
  }
  for (int64_t n = 0; n < d.N; ++n) {
    double mx = -INFINITY, z = 0;
    for (int64_t e = 0; e < d.E; ++e) mx = std::max(mx, double(logits[n * d.E + e]));
    for (int64_t e = 0; e < d.E; ++e) z += std::exp(double(logits[n * d.E + e]) - mx);
    ref_z += (mx + std::log(z)) * (mx + std::log(z)) / double(d.N);
  }
  EXPECT_NEAR(aux, ref_aux, 1e-5 * ref_aux);
  EXPECT_NEAR(zl, ref_z, 1e-5 * ref_z);
}

INSTANTIATE_TEST_SUITE_P(Table, RouterReference,
                         ::testing::Values(RouterCase{1, ScoreFn::kSoftmax, false, false},
                                           RouterCase{2, ScoreFn::kSoftmax, true, false},
                                           RouterCase{2, ScoreFn::kSoftmax, true, true},
                                           RouterCase{3, ScoreFn::kSigmoid, false, false},
                                           RouterCase{2, ScoreFn::kSigmoid, true, true},
                                           RouterCase{8, ScoreFn::kSoftmax, false, true}),
                         [](const auto& i) {
                           return cat(i.param.fn == ScoreFn::kSoftmax ? "softmax" : "sigmoid", "_K",
                                      i.param.K, i.param.renorm ? "_renorm" : "_plain",
                                      i.param.bias ? "_bias" : "");
                         });

// ---------------------------------------------------------------- moe_assign

struct Assignment {
  std::vector<int32_t> slot, row_token;
  std::vector<int64_t> begin, kept;
  int64_t dropped = 0;
};

// Obviously-correct assignment: per (group, expert), candidates in token
// order; over capacity, keep the `capacity` best by (score desc, token asc),
// or (DropOrder::kArrival) the first `capacity` by (position in the sequence,
// sequence in the group): Megatron-LM's (T, B)-major token order.
Assignment reference_assign(const std::vector<int32_t>& idx, const std::vector<float>& scores,
                            const DispatchDims& d) {
  Assignment r;
  r.slot.assign(d.N * d.K, -1);
  r.begin.assign(d.E + 1, 0);
  r.kept.assign(d.E, 0);
  std::vector<char> keep(d.N * d.K, 0);
  for (int64_t g = 0; g < d.N / d.group; ++g)
    for (int64_t e = 0; e < d.E; ++e) {
      std::vector<int64_t> cand;  // assignment ids n*K + k
      for (int64_t n = g * d.group; n < (g + 1) * d.group; ++n)
        for (int64_t k = 0; k < d.K; ++k)
          if (idx[n * d.K + k] == e) cand.push_back(n * d.K + k);
      std::vector<int64_t> ranked = cand;
      auto arrival = [&](int64_t a) {  // (position, sequence) of a's token within the group
        const int64_t i = a / d.K - g * d.group;
        return d.seq_len > 0 && d.group > d.seq_len ? std::pair{i % d.seq_len, i / d.seq_len}
                                                    : std::pair{i, int64_t(0)};
      };
      std::sort(ranked.begin(), ranked.end(), [&](int64_t a, int64_t b) {
        if (d.order == DropOrder::kArrival) return arrival(a) < arrival(b);
        const float sa = scores[(a / d.K) * d.E + e], sb = scores[(b / d.K) * d.E + e];
        return sa != sb ? sa > sb : a / d.K < b / d.K;
      });
      const size_t cap = d.capacity > 0 ? size_t(d.capacity) : ranked.size();
      for (size_t i = 0; i < ranked.size(); ++i) {
        if (i < cap)
          keep[ranked[i]] = 1;
        else
          ++r.dropped;
      }
    }
  for (int64_t e = 0; e < d.E; ++e) {
    r.begin[e] = int64_t(r.row_token.size());
    for (int64_t g = 0; g < d.N / d.group; ++g)
      for (int64_t n = g * d.group; n < (g + 1) * d.group; ++n)
        for (int64_t k = 0; k < d.K; ++k) {
          const int64_t a = n * d.K + k;
          if (idx[a] != e || !keep[a]) continue;
          r.slot[a] = int32_t(r.row_token.size());
          r.row_token.push_back(int32_t(n));
          r.kept[e]++;
        }
    while ((int64_t(r.row_token.size()) - r.begin[e]) % d.row_align != 0) r.row_token.push_back(-1);
  }
  r.begin[d.E] = int64_t(r.row_token.size());
  return r;
}

Assignment kernel_assign(const std::vector<int32_t>& idx, const std::vector<float>& scores,
                         const DispatchDims& d) {
  Assignment r;
  r.slot.assign(d.N * d.K, 12345);
  r.begin.assign(d.E + 1, -7);
  r.kept.assign(d.E, -7);
  r.row_token.assign(moe_max_rows(d), 12345);
  r.dropped = moe_assign(r.slot.data(), r.begin.data(), r.row_token.data(), r.kept.data(), idx.data(),
                         scores.data(), d);
  EXPECT_LE(r.begin[d.E], int64_t(r.row_token.size())) << "more rows than moe_max_rows";
  r.row_token.resize(std::max<int64_t>(0, r.begin[d.E]));
  return r;
}

void expect_same(const Assignment& got, const Assignment& want) {
  EXPECT_EQ(got.dropped, want.dropped);
  EXPECT_EQ(got.begin, want.begin);
  EXPECT_EQ(got.kept, want.kept);
  EXPECT_EQ(got.slot, want.slot);
  EXPECT_EQ(got.row_token, want.row_token);
}

TEST(MoeAssign, HandWorkedExample) {
  // 4 tokens, one group, capacity 1, K = 1. Expert 0 is wanted by tokens 0, 1, 3
  // with scores 0.5, 0.9, 0.9: token 1 wins (tie with 3 goes to the lower index).
  const DispatchDims d{4, 2, 1, 4, 1, 2};
  const std::vector<int32_t> idx{0, 0, 1, 0};
  const std::vector<float> scores{0.5f, 0.1f, 0.9f, 0.1f, 0.2f, 0.8f, 0.9f, 0.1f};
  const Assignment a = kernel_assign(idx, scores, d);
  EXPECT_EQ(a.dropped, 2);
  EXPECT_EQ(a.slot, (std::vector<int32_t>{-1, 0, 2, -1}));
  EXPECT_EQ(a.begin, (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(a.row_token, (std::vector<int32_t>{1, -1, 2, -1}));
  EXPECT_EQ(a.kept, (std::vector<int64_t>{1, 1}));
}

TEST(MoeAssign, PositionKeepsTheFirstArrivals) {
  // The scores of HandWorkedExample; by arrival, token 0 (the earliest) keeps
  // expert 0's one slot and tokens 1 and 3 are dropped, whatever their scores.
  DispatchDims d{4, 2, 1, 4, 1, 2};
  d.order = DropOrder::kArrival;
  const std::vector<int32_t> idx{0, 0, 1, 0};
  const std::vector<float> scores{0.5f, 0.1f, 0.9f, 0.1f, 0.2f, 0.8f, 0.9f, 0.1f};
  const Assignment a = kernel_assign(idx, scores, d);
  EXPECT_EQ(a.dropped, 2);
  EXPECT_EQ(a.slot, (std::vector<int32_t>{0, -1, 2, -1}));
  EXPECT_EQ(a.row_token, (std::vector<int32_t>{0, -1, 2, -1}));
  expect_same(a, reference_assign(idx, scores, d));
}

TEST(MoeAssign, PositionAcrossSequencesGoesPositionFirst) {
  // One group of two sequences of 3 (tokens 0-2 and 3-5), all on expert 0,
  // capacity 3, K = 2 with expert 1 second. Arrival: positions 0 (tokens 0,
  // 3), then 1 (1, 4), then 2 (2, 5); the slots go to tokens 0, 3 and 1.
  DispatchDims d{6, 2, 2, 6, 3, 1};
  d.order = DropOrder::kArrival;
  d.seq_len = 3;
  const std::vector<int32_t> idx{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1};
  const std::vector<float> scores(12, 0.5f);
  const Assignment a = kernel_assign(idx, scores, d);
  EXPECT_EQ(a.dropped, 3 + 3);  // expert 1 is over capacity too, with the same order
  EXPECT_EQ(a.row_token, (std::vector<int32_t>{0, 1, 3, 0, 1, 3}));
  EXPECT_EQ(a.slot, (std::vector<int32_t>{0, 3, 1, 4, -1, -1, 2, 5, -1, -1, -1, -1}));
  expect_same(a, reference_assign(idx, scores, d));
  // Read as token order (no sequence length), the first three tokens would win.
  d.seq_len = 0;
  EXPECT_EQ(kernel_assign(idx, scores, d).row_token, (std::vector<int32_t>{0, 1, 2, 0, 1, 2}));
}

TEST(MoeAssign, GroupsAreIndependent) {
  // Two groups of 3; expert 0 over capacity in group 0 only.
  const DispatchDims d{6, 2, 1, 3, 2, 1};
  const std::vector<int32_t> idx{0, 0, 0, 0, 1, 1};
  std::vector<float> scores(12, 0.5f);
  scores[0 * 2] = 0.1f;  // token 0 has the lowest expert-0 score in group 0
  const Assignment a = kernel_assign(idx, scores, d);
  EXPECT_EQ(a.dropped, 1);
  EXPECT_EQ(a.slot, (std::vector<int32_t>{-1, 0, 1, 2, 3, 4}));
  EXPECT_EQ(a.row_token, (std::vector<int32_t>{1, 2, 3, 4, 5}));
  expect_same(a, reference_assign(idx, scores, d));
}

TEST(MoeAssign, DroplessKeepsEverything) {
  const DispatchDims d{5, 3, 2, 5, 0, 4};
  const std::vector<int32_t> idx{0, 1, 0, 2, 0, 1, 0, 2, 0, 1};  // expert 0 gets all 5 tokens
  const std::vector<float> scores(15, 0.3f);
  const Assignment a = kernel_assign(idx, scores, d);
  EXPECT_EQ(a.dropped, 0);
  EXPECT_EQ(a.begin, (std::vector<int64_t>{0, 8, 12, 16}));
  EXPECT_EQ(a.row_token, (std::vector<int32_t>{0, 1, 2, 3, 4, -1, -1, -1, 0, 2, 4, -1, 1, 3, -1, -1}));
  expect_same(a, reference_assign(idx, scores, d));
}

struct AssignCase {
  DispatchDims d;
  bool ties;  // scores drawn from 3 levels (many ties)
};

class MoeAssignReference : public ::testing::TestWithParam<AssignCase> {};

TEST_P(MoeAssignReference, MatchesReferenceLoops) {
  const auto [d, ties] = GetParam();
  std::vector<int32_t> idx(d.N * d.K);
  std::vector<float> scores(d.N * d.E);
  for (int64_t n = 0; n < d.N; ++n) {
    std::vector<int32_t> perm(d.E);
    std::iota(perm.begin(), perm.end(), 0);
    // Skewed: expert 0 is preferred, so capacity binds unevenly.
    for (int64_t e = d.E - 1; e > 0; --e) std::swap(perm[e], perm[rand_u32(31, uint64_t(n * 64 + e)) % uint32_t(e + 1)]);
    if (rand_u32(32, uint64_t(n)) % 2 == 0) std::swap(perm[0], *std::find(perm.begin(), perm.end(), 0));
    for (int64_t k = 0; k < d.K; ++k) idx[n * d.K + k] = perm[k];
    for (int64_t e = 0; e < d.E; ++e) {
      const uint32_t u = rand_u32(33, uint64_t(n * d.E + e));
      scores[n * d.E + e] = ties ? 0.25f * float(1 + u % 3) : uniform01(u);
    }
  }
  const Assignment got = kernel_assign(idx, scores, d), want = reference_assign(idx, scores, d);
  expect_same(got, want);
  // The same routes under the other order: the same number of drops (a
  // per-expert count), another kept set wherever a cut falls.
  DispatchDims other = d;
  other.order = d.order == DropOrder::kScore ? DropOrder::kArrival : DropOrder::kScore;
  const Assignment swapped = kernel_assign(idx, scores, other);
  expect_same(swapped, reference_assign(idx, scores, other));
  EXPECT_EQ(swapped.dropped, got.dropped);
  if (got.dropped > 0) {
    EXPECT_NE(swapped.slot, got.slot);
  }
  if (d.capacity > 0) {
    for (int64_t e = 0; e < d.E; ++e) EXPECT_LE(got.kept[e], d.capacity * (d.N / d.group));
  } else {
    EXPECT_EQ(got.dropped, 0);
  }
}

constexpr DropOrder kArrival = DropOrder::kArrival;

INSTANTIATE_TEST_SUITE_P(
    Table, MoeAssignReference,
    ::testing::Values(AssignCase{{64, 8, 2, 16, 3, 4}, false}, AssignCase{{64, 8, 2, 16, 3, 4}, true},
                      AssignCase{{60, 5, 1, 20, 2, 1}, true}, AssignCase{{48, 6, 3, 48, 20, 8}, true},
                      AssignCase{{32, 4, 2, 8, 0, 16}, false}, AssignCase{{32, 4, 4, 8, 1, 1}, true},
                      // Position order: groups within a sequence (T 16 or 32), groups of
                      // 2 and 4 whole sequences (T 16, 12), dropless.
                      AssignCase{{64, 8, 2, 16, 3, 4, kArrival, 32}, false},
                      AssignCase{{60, 5, 1, 20, 2, 1, kArrival, 20}, true},
                      AssignCase{{64, 8, 2, 32, 5, 4, kArrival, 16}, false},
                      AssignCase{{48, 6, 3, 48, 14, 8, kArrival, 12}, true},
                      AssignCase{{32, 4, 2, 8, 0, 16, kArrival, 8}, false}),
    [](const auto& i) {
      const DispatchDims& d = i.param.d;
      return cat("N", d.N, "_E", d.E, "_K", d.K, "_G", d.group, "_cap", d.capacity, "_align", d.row_align,
                 i.param.ties ? "_ties" : "", d.order == kArrival ? cat("_position_T", d.seq_len) : "");
    });

// ---------------------------------------------------------------- AdamW

TEST(AdamWReference, MatchesScalarLoopOverSteps) {
  const int64_t n = 1000;
  for (float wd : {0.0f, 0.1f})
    for (float gs : {1.0f, 0.5f}) {
      SCOPED_TRACE(cat("wd ", wd, " grad_scale ", gs));
      auto p = randn(n, 1.0f, 41);
      std::vector<float> m(n, 0.0f), v(n, 0.0f);
      for (int64_t step = 1; step <= 5; ++step) {
        const auto g = randn(n, 1.0f, 42, uint64_t(step));
        const AdamWParams a{0.05f, 0.9f, 0.95f, 1e-8f, wd, gs, step};
        // The hyperparameters as the kernel receives them (float), in double.
        const double lr = a.lr, b1 = a.beta1, b2 = a.beta2, eps = a.eps, wdd = a.weight_decay;
        const auto p0 = p, m0 = m, v0 = v;
        adamw_update(p.data(), m.data(), v.data(), g.data(), n, a);
        for (int64_t i = 0; i < n; ++i) {
          const double gi = double(g[i]) * double(gs);
          const double mi = b1 * m0[i] + (1 - b1) * gi;
          const double vi = b2 * v0[i] + (1 - b2) * gi * gi;
          const double mhat = mi / (1.0 - std::pow(b1, double(step)));
          const double vhat = vi / (1.0 - std::pow(b2, double(step)));
          const double upd = lr * mhat / (std::sqrt(vhat) + eps);
          const double pi = double(p0[i]) - lr * wdd * p0[i] - upd;
          const double m_scale = b1 * std::abs(m0[i]) + (1 - b1) * std::abs(gi);
          ASSERT_NEAR(m[i], mi, 1e-6 * m_scale + 1e-12) << "m step " << step << " i " << i;
          ASSERT_NEAR(v[i], vi, 1e-6 * vi + 1e-12) << "v step " << step << " i " << i;
          ASSERT_NEAR(p[i], pi, 1e-6 * (std::abs(p0[i]) + std::abs(upd))) << "p step " << step << " i " << i;
        }
      }
    }
  // Bias correction: at step 1 every coordinate moves by lr * sign(g), however
  // small g is; weight decay uses the old p.
  std::vector<float> p{1.0f, -2.0f}, m{0.0f, 0.0f}, v{0.0f, 0.0f};
  const std::vector<float> g{0.001f, -3.0f};
  adamw_update(p.data(), m.data(), v.data(), g.data(), 2, AdamWParams{0.01f, 0.9f, 0.999f, 1e-12f, 0.5f, 1.0f, 1});
  EXPECT_NEAR(p[0], 1.0f * (1 - 0.005f) - 0.01f, 1e-6);
  EXPECT_NEAR(p[1], -2.0f * (1 - 0.005f) + 0.01f, 1e-6);
}

// ---------------------------------------------------------------- heads

TEST(HeadsReference, SplitMergeLayoutAndRoundTrip) {
  const int64_t B = 2, T = 5, H = 4, Hkv = 2, Dh = 3, W = (H + 2 * Hkv) * Dh;
  auto qkv = randn(B * T * W, 1.0f, 51);
  std::vector<float> q(B * H * T * Dh), k(B * Hkv * T * Dh), v(B * Hkv * T * Dh);
  split_qkv(q.data(), k.data(), v.data(), qkv.data(), B, T, H, Hkv, Dh);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t e = 0; e < Dh; ++e) {
        const float* row = &qkv[(b * T + t) * W];
        for (int64_t h = 0; h < H; ++h) ASSERT_EQ(q[((b * H + h) * T + t) * Dh + e], row[h * Dh + e]);
        for (int64_t h = 0; h < Hkv; ++h) {
          ASSERT_EQ(k[((b * Hkv + h) * T + t) * Dh + e], row[(H + h) * Dh + e]);
          ASSERT_EQ(v[((b * Hkv + h) * T + t) * Dh + e], row[(H + Hkv + h) * Dh + e]);
        }
      }
  std::vector<float> back(B * T * W, -1.0f);
  split_qkv_backward(back.data(), q.data(), k.data(), v.data(), B, T, H, Hkv, Dh);
  EXPECT_EQ(back, qkv);

  std::vector<float> merged(B * T * H * Dh), heads(B * H * T * Dh);
  merge_heads(merged.data(), q.data(), B, T, H, Dh);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t e = 0; e < Dh; ++e)
          ASSERT_EQ(merged[(b * T + t) * H * Dh + h * Dh + e], q[((b * H + h) * T + t) * Dh + e]);
  merge_heads_backward(heads.data(), merged.data(), B, T, H, Dh);
  EXPECT_EQ(heads, q);
  // The token-major side inside wider rows (ld): the same values, the other columns untouched.
  const int64_t ld = H * Dh + 5;
  std::vector<float> wide(B * T * ld, 3.0f), heads2(B * H * T * Dh);
  merge_heads(wide.data(), q.data(), B, T, H, Dh, ld);
  for (int64_t n = 0; n < B * T; ++n)
    for (int64_t j = 0; j < ld; ++j) ASSERT_EQ(wide[n * ld + j], j < H * Dh ? merged[n * H * Dh + j] : 3.0f);
  merge_heads_backward(heads2.data(), wide.data(), B, T, H, Dh, ld);
  EXPECT_EQ(heads2, q);
}

// The fused split + RoPE (and its backward) are the separate kernels, bit for bit.
TEST(HeadsReference, SplitWithRopeIsSplitThenRope) {
  const int64_t B = 2, T = 7, H = 4, Hkv = 2, Dh = 8, W = (H + 2 * Hkv) * Dh;
  std::vector<float> cs(T * Dh / 2), sn(T * Dh / 2);
  rope_tables(cs.data(), sn.data(), T, Dh, 10000.0);
  const auto qkv = randn(B * T * W, 1.0f, 61);
  std::vector<float> q1(B * H * T * Dh), k1(B * Hkv * T * Dh), v1(k1.size()), q2(q1.size()), k2(k1.size()),
      v2(k1.size());
  split_qkv(q1.data(), k1.data(), v1.data(), qkv.data(), B, T, H, Hkv, Dh);
  rope_forward(q1.data(), q1.data(), cs.data(), sn.data(), B * H, T, Dh);
  rope_forward(k1.data(), k1.data(), cs.data(), sn.data(), B * Hkv, T, Dh);
  split_qkv_rope(q2.data(), k2.data(), v2.data(), qkv.data(), cs.data(), sn.data(), B, T, H, Hkv, Dh);
  EXPECT_EQ(q1, q2);
  EXPECT_EQ(k1, k2);
  EXPECT_EQ(v1, v2);
  EXPECT_NE(q1, std::vector<float>(qkv.begin(), qkv.begin() + int64_t(q1.size())));  // rotated, not copied

  const auto dq = randn(q1.size(), 1.0f, 62), dk = randn(k1.size(), 1.0f, 63), dv = randn(k1.size(), 1.0f, 64);
  auto dq1 = dq, dk1 = dk;
  rope_backward(dq1.data(), dq1.data(), cs.data(), sn.data(), B * H, T, Dh);
  rope_backward(dk1.data(), dk1.data(), cs.data(), sn.data(), B * Hkv, T, Dh);
  std::vector<float> back1(B * T * W), back2(B * T * W);
  split_qkv_backward(back1.data(), dq1.data(), dk1.data(), dv.data(), B, T, H, Hkv, Dh);
  split_qkv_rope_backward(back2.data(), dq.data(), dk.data(), dv.data(), cs.data(), sn.data(), B, T, H, Hkv, Dh);
  EXPECT_EQ(back1, back2);
}

}  // namespace
}  // namespace mt
