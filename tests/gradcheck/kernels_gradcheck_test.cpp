// kernels_gradcheck_test.cpp — per-op analytic backward against central
// differences. Every op gets the scalar loss L = sum_i w_i y_i (fixed random
// w, accumulated in double), so dL/dy = w feeds the backward kernel and every
// input and weight is compared with (L(x + eps) - L(x - eps)) / 2 eps.
// A last group of tests feeds deliberately wrong gradients to the same checks
// and requires them to fail.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/rng.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_matmul.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/moe_dispatch.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/router.h"
#include "kernels/cpu/swiglu.h"
#include "support/gradcheck.h"
#include "support/random.h"

namespace mt {
namespace {

using testing::expect_gradient_matches;
using testing::GradCheckOptions;

using testing::randn;
using testing::weighted;

uint32_t rand_u32(uint64_t seed, uint64_t i) { return testing::rand_u32(seed, 0x5eed, i); }


// Test-name builder (string operator+ chains trip a GCC 12 -Wrestrict false positive).
template <class... A>
std::string cat(const A&... a) {
  std::ostringstream s;
  (s << ... << a);
  return s.str();
}

// Gradients are checked single-threaded: the many tiny forwards would
// otherwise be dominated by OpenMP fork/join on a shared machine, and thread
// invariance is kernels_threads_test's job.
const bool one_thread = [] {
  omp_set_num_threads(1);
  return true;
}();

// Small ops check every coordinate; attention samples.
constexpr int kAll = 1 << 30;

GradCheckOptions opts(float eps, int samples = 48) {
  GradCheckOptions o;
  o.eps = eps;
  o.samples = samples;
  return o;
}

// ---------------------------------------------------------------- RMSNorm

struct NormCase {
  int64_t N, C;
};

class RmsNormGrad : public ::testing::TestWithParam<NormCase> {};

TEST_P(RmsNormGrad, InputAndWeight) {
  const auto [N, C] = GetParam();
  const float eps = 1e-5f;
  auto x = randn(N * C, 1.0f, 1), w = randn(C, 0.3f, 2), wl = randn(N * C, 1.0f, 3);
  for (float& v : w) v += 1.0f;
  std::vector<float> y(N * C), rstd(N), y2(N * C), rstd2(N);
  rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, eps);
  // beta 0 must overwrite whatever dx holds.
  std::vector<float> dx(N * C, std::numeric_limits<float>::quiet_NaN()), dw(C, 0.0f);
  rmsnorm_backward(dx.data(), dw.data(), wl.data(), x.data(), w.data(), rstd.data(), N, C, 0.0f);

  // beta 1: dx accumulates onto the existing gradient; dw always accumulates.
  auto dx_acc = randn(N * C, 1.0f, 4), dw_acc = randn(C, 1.0f, 5);
  const auto dx0 = dx_acc, dw0 = dw_acc;
  rmsnorm_backward(dx_acc.data(), dw_acc.data(), wl.data(), x.data(), w.data(), rstd.data(), N, C,
                   1.0f);
  for (int64_t i = 0; i < N * C; ++i)
    ASSERT_NEAR(dx_acc[i], dx0[i] + dx[i], 1e-6 * (std::abs(dx0[i]) + std::abs(dx[i])) + 1e-7)
        << "beta=1 dx[" << i << "]";
  for (int64_t c = 0; c < C; ++c) ASSERT_FLOAT_EQ(dw_acc[c], dw0[c] + dw[c]) << "dw[" << c << "]";

  auto loss = [&] {
    rmsnorm_forward(y2.data(), rstd2.data(), x.data(), w.data(), N, C, eps);
    return weighted(wl, y2.data());
  };
  EXPECT_EQ(loss(), weighted(wl, y.data()));
  expect_gradient_matches("rmsnorm dx", x.data(), N * C, dx.data(), loss, opts(1e-2f, kAll));
  expect_gradient_matches("rmsnorm dw", w.data(), C, dw.data(), loss, opts(1e-2f, kAll));
}

INSTANTIATE_TEST_SUITE_P(Table, RmsNormGrad,
                         ::testing::Values(NormCase{1, 5}, NormCase{3, 7}, NormCase{4, 16},
                                           NormCase{2, 33}, NormCase{5, 64}),
                         [](const auto& i) {
                           return cat("N", i.param.N, "_C", i.param.C);
                         });

// ---------------------------------------------------------------- RoPE

struct RopeCase {
  int64_t BH, T, Dh;
  double theta;
};

class RopeGrad : public ::testing::TestWithParam<RopeCase> {};

TEST_P(RopeGrad, Input) {
  const auto [BH, T, Dh, theta] = GetParam();
  const int64_t n = BH * T * Dh;
  std::vector<float> cs(T * Dh / 2), sn(T * Dh / 2);
  rope_tables(cs.data(), sn.data(), T, Dh, theta);
  auto x = randn(n, 1.0f, 11), wl = randn(n, 1.0f, 12);
  std::vector<float> y(n), dx(n);
  rope_backward(dx.data(), wl.data(), cs.data(), sn.data(), BH, T, Dh);
  auto loss = [&] {
    rope_forward(y.data(), x.data(), cs.data(), sn.data(), BH, T, Dh);
    return weighted(wl, y.data());
  };
  expect_gradient_matches("rope dx", x.data(), n, dx.data(), loss, opts(1e-2f, kAll));

  // In place (y aliasing x, dx aliasing dy) gives the same bits.
  loss();
  std::vector<float> inplace = x, dinplace = wl;
  rope_forward(inplace.data(), inplace.data(), cs.data(), sn.data(), BH, T, Dh);
  rope_backward(dinplace.data(), dinplace.data(), cs.data(), sn.data(), BH, T, Dh);
  EXPECT_EQ(0, std::memcmp(inplace.data(), y.data(), sizeof(float) * n));
  EXPECT_EQ(0, std::memcmp(dinplace.data(), dx.data(), sizeof(float) * n));
}

INSTANTIATE_TEST_SUITE_P(Table, RopeGrad,
                         ::testing::Values(RopeCase{2, 5, 8, 10000.0}, RopeCase{3, 7, 4, 100.0},
                                           RopeCase{1, 19, 16, 10.0}, RopeCase{4, 3, 2, 500.0}),
                         [](const auto& i) {
                           return cat("BH", i.param.BH, "_T", i.param.T, "_Dh", i.param.Dh);
                         });

// ---------------------------------------------------------------- attention

struct AttnCase {
  int64_t B, H, Hkv, T, Dh, window;
  int64_t doc_tokens = 0;  // > 0: rows packed with documents this long (document masking)
};

std::string attn_name(const AttnCase& c) {
  return cat("T", c.T, "_w", c.window, "_H", c.H, "kv", c.Hkv, c.doc_tokens > 0 ? cat("_docs", c.doc_tokens) : "");
}

std::vector<AttnCase> attn_cases() {
  std::vector<AttnCase> v;
  // T not a multiple of the 16-query block; windows global, 1, 3, one that
  // crosses a block boundary, exactly T and beyond T; H/Hkv = 1, 2, 4.
  for (int64_t T : {5, 19, 37})
    for (int64_t w : std::vector<int64_t>{0, 1, 3, 17, T, T + 5})
      for (int64_t g : {1, 2, 4}) {
        if (w == 17 && T < 17) continue;
        v.push_back({2, 4, 4 / g, T, 8, w});
      }
  // Several query tiles of the matmul kernel (32 or 64 queries), a window
  // band that starts mid-tile.
  for (int64_t w : {0, 45}) v.push_back({1, 4, 1, 100, 8, w});
  // Document masking: documents shorter than a tile, and ones that cross
  // tiles and the window, of the second row shifted by one token.
  for (int64_t w : {0, 5})
    for (int64_t L : {7, 40}) v.push_back({2, 4, 2, 90, 8, w, L});
  return v;
}

class AttentionGrad : public ::testing::TestWithParam<AttnCase> {};

using AttnForward = std::function<void(float*, float*, const float*, const float*, const float*, const AttentionDims&)>;
using AttnBackward = std::function<void(float*, float*, float*, const float*, const float*, const float*,
                                        const float*, const float*, const float*, const AttentionDims&)>;

void check_attention_gradient(const AttnCase& c, const AttnForward& forward, const AttnBackward& backward) {
  AttentionDims d{c.B, c.H, c.Hkv, c.T, c.Dh, c.window};
  std::vector<int32_t> starts(size_t(c.B * c.T));
  if (c.doc_tokens > 0) {  // row b's documents start at multiples of doc_tokens, less b
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t t = 0; t < c.T; ++t)
        starts[size_t(b * c.T + t)] = int32_t(std::max<int64_t>(0, (t + b) / c.doc_tokens * c.doc_tokens - b));
    d.doc_start = starts.data();
  }
  const int64_t nq = c.B * c.H * c.T * c.Dh, nk = c.B * c.Hkv * c.T * c.Dh;
  auto q = randn(nq, 1.0f, 21), k = randn(nk, 1.0f, 22), v = randn(nk, 1.0f, 23);
  auto wl = randn(nq, 1.0f, 24);
  std::vector<float> o(nq), lse(c.B * c.H * c.T), o2(nq), lse2(c.B * c.H * c.T);
  forward(o.data(), lse.data(), q.data(), k.data(), v.data(), d);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> dq(nq, nan), dk(nk, nan), dv(nk, nan);  // all written by backward
  backward(dq.data(), dk.data(), dv.data(), wl.data(), q.data(), k.data(), v.data(), o.data(), lse.data(), d);
  auto loss = [&] {
    forward(o2.data(), lse2.data(), q.data(), k.data(), v.data(), d);
    return weighted(wl, o2.data());
  };
  const auto opt = opts(5e-3f, 160);
  if (c.window == 1) {
    // Each query sees only its own key: o_i = v_i, so dq = dk = 0 (up to
    // rounding; a relative vector check of two zero vectors is meaningless).
    for (int64_t i = 0; i < nq; ++i) ASSERT_NEAR(dq[i], 0.0f, 1e-5f) << "dq[" << i << "]";
    for (int64_t i = 0; i < nk; ++i) ASSERT_NEAR(dk[i], 0.0f, 1e-5f) << "dk[" << i << "]";
    const double l0 = loss();
    for (float& x : q) x += 0.5f;
    for (float& x : k) x -= 0.25f;
    EXPECT_EQ(loss(), l0) << "window 1 output depends on q or k";
  } else {
    expect_gradient_matches("attention dq", q.data(), nq, dq.data(), loss, opt);
    expect_gradient_matches("attention dk", k.data(), nk, dk.data(), loss, opt);
  }
  expect_gradient_matches("attention dv", v.data(), nk, dv.data(), loss, opt);
}

TEST_P(AttentionGrad, QueryKeyValue) { check_attention_gradient(GetParam(), attention_forward, attention_backward); }

// The matmul-tiled kernel (attention_matmul.h) in fp32, where finite
// differences are meaningful; its bf16 form is held to the fp32 kernel in
// kernels_reference_test.
TEST_P(AttentionGrad, MatmulKernelQueryKeyValue) {
  check_attention_gradient(
      GetParam(),
      [](float* o, float* lse, const float* q, const float* k, const float* v, const AttentionDims& d) {
        attention_matmul_forward(o, lse, q, k, v, d, MatmulPrecision::kFp32);
      },
      [](float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k, const float* v,
         const float* o, const float* lse, const AttentionDims& d) {
        attention_matmul_backward(dq, dk, dv, dout, q, k, v, o, lse, d, MatmulPrecision::kFp32);
      });
}

INSTANTIATE_TEST_SUITE_P(Table, AttentionGrad, ::testing::ValuesIn(attn_cases()),
                         [](const auto& i) { return attn_name(i.param); });

// ---------------------------------------------------------------- SwiGLU

struct SwigluCase {
  int64_t M, F;
};

class SwigluGrad : public ::testing::TestWithParam<SwigluCase> {};

TEST_P(SwigluGrad, GateAndUp) {
  const auto [M, F] = GetParam();
  auto h = randn(M * 2 * F, 2.0f, 31), wl = randn(M * F, 1.0f, 32);
  std::vector<float> z(M * F), dh(M * 2 * F, std::numeric_limits<float>::quiet_NaN());
  swiglu_backward(dh.data(), wl.data(), h.data(), M, F);
  auto loss = [&] {
    swiglu_forward(z.data(), h.data(), M, F);
    return weighted(wl, z.data());
  };
  expect_gradient_matches("swiglu dh", h.data(), M * 2 * F, dh.data(), loss, opts(1e-2f, kAll));
}

INSTANTIATE_TEST_SUITE_P(Table, SwigluGrad,
                         ::testing::Values(SwigluCase{1, 1}, SwigluCase{3, 5}, SwigluCase{4, 16},
                                           SwigluCase{2, 33}),
                         [](const auto& i) {
                           return cat("M", i.param.M, "_F", i.param.F);
                         });

// ---------------------------------------------------------------- router

struct RouterCase {
  std::string name;
  RouterDims d;
  float aux_coef, z_coef;
  bool bias;
};

std::vector<RouterCase> router_cases() {
  std::vector<RouterCase> v;
  for (ScoreFn fn : {ScoreFn::kSoftmax, ScoreFn::kSigmoid})
    for (bool renorm : {false, true})
      for (int64_t K : {1, 2}) {
        RouterCase c;
        c.name = cat(fn == ScoreFn::kSoftmax ? "softmax" : "sigmoid", renorm ? "_renorm" : "_plain", "_K", K);
        c.d = RouterDims{16, 6, K, fn, renorm, 8};
        c.aux_coef = 0.3f;
        c.z_coef = 0.05f;
        c.bias = K == 2;
        v.push_back(c);
      }
  // One group spanning all tokens, larger K and E, and the gate-only path.
  v.push_back({"softmax_renorm_K3_onegroup", RouterDims{12, 8, 3, ScoreFn::kSoftmax, true, 12}, 0.5f, 0.1f, false});
  v.push_back({"sigmoid_plain_K3_onegroup", RouterDims{12, 8, 3, ScoreFn::kSigmoid, false, 12}, 0.5f, 0.1f, true});
  v.push_back({"softmax_renorm_K2_noaux", RouterDims{16, 6, 2, ScoreFn::kSoftmax, true, 8}, 0.0f, 0.0f, false});
  return v;
}

class RouterGrad : public ::testing::TestWithParam<RouterCase> {};

TEST_P(RouterGrad, Logits) {
  const RouterCase& c = GetParam();
  const RouterDims& d = c.d;
  auto logits = randn(d.N * d.E, 1.5f, 41), wg = randn(d.N * d.K, 1.0f, 42);
  auto bias = randn(d.E, 0.05f, 43);
  const float* b = c.bias ? bias.data() : nullptr;
  std::vector<int32_t> idx(d.N * d.K), idx2(d.N * d.K);
  std::vector<float> gate(d.N * d.K), scores(d.N * d.E), gate2(d.N * d.K), scores2(d.N * d.E);
  router_topk_forward(idx.data(), gate.data(), scores.data(), logits.data(), b, d);
  std::vector<float> dlogits(d.N * d.E, std::numeric_limits<float>::quiet_NaN());
  router_backward(dlogits.data(), wg.data(), logits.data(), scores.data(), idx.data(), gate.data(), d,
                  c.aux_coef, c.z_coef);

  auto loss = [&] {
    router_topk_forward(idx2.data(), gate2.data(), scores2.data(), logits.data(), b, d);
    double aux = 0.0, z = 0.0;
    router_losses(&aux, &z, logits.data(), scores2.data(), idx2.data(), d);
    return weighted(wg, gate2.data()) + double(c.aux_coef) * aux + double(c.z_coef) * z;
  };
  // Perturbations that flip a routing decision are skipped (the loss is not
  // differentiable across a flip).
  auto same_route = [&] { return idx2 == idx; };
  loss();
  ASSERT_TRUE(same_route());
  expect_gradient_matches("router dlogits", logits.data(), d.N * d.E, dlogits.data(), loss,
                          opts(1e-3f, kAll), same_route);
}

INSTANTIATE_TEST_SUITE_P(Table, RouterGrad, ::testing::ValuesIn(router_cases()),
                         [](const auto& i) { return i.param.name; });

// ---------------------------------------------------------------- MoE dispatch chain

struct MoeCase {
  std::string name;
  DispatchDims d;
  int64_t C, ldx_pad;
  float beta;
  bool expect_drops;
};

std::vector<MoeCase> moe_cases() {
  constexpr DropOrder kArrival = DropOrder::kArrival;
  return {
      {"drops_K2_align4", DispatchDims{12, 4, 2, 6, 2, 4}, 5, 0, 0.0f, true},
      {"drops_K1_ldx_beta1", DispatchDims{10, 3, 1, 10, 2, 1}, 4, 3, 1.0f, true},
      {"drops_K3_groups", DispatchDims{16, 5, 3, 4, 1, 2}, 3, 1, 0.0f, true},
      {"dropless_align8", DispatchDims{8, 4, 2, 8, 0, 8}, 3, 0, 0.0f, false},
      // The position policy: groups within a sequence, and a group of three sequences of 4.
      {"position_drops_K2_align4", DispatchDims{12, 4, 2, 6, 2, 4, kArrival, 6}, 5, 0, 0.0f, true},
      {"position_group_of_3_sequences_K2", DispatchDims{12, 3, 2, 12, 5, 2, kArrival, 4}, 4, 2, 1.0f, true},
  };
}

// K distinct experts per token, random scores (N, E) and gates (N, K).
void random_routes(std::vector<int32_t>& idx, std::vector<float>& scores, std::vector<float>& gate,
                   const DispatchDims& d, uint64_t seed) {
  idx.resize(d.N * d.K);
  scores.resize(d.N * d.E);
  for (int64_t n = 0; n < d.N; ++n) {
    std::vector<int32_t> perm(d.E);
    for (int64_t e = 0; e < d.E; ++e) perm[e] = int32_t(e);
    for (int64_t e = d.E - 1; e > 0; --e)
      std::swap(perm[e], perm[rand_u32(seed, uint64_t(n * 64 + e)) % uint32_t(e + 1)]);
    for (int64_t k = 0; k < d.K; ++k) idx[n * d.K + k] = perm[k];
    for (int64_t e = 0; e < d.E; ++e)
      scores[n * d.E + e] = uniform01(rand_u32(seed + 1, uint64_t(n * d.E + e)));
  }
  gate = randn(d.N * d.K, 1.0f, seed + 2);
}

class MoeDispatchGrad : public ::testing::TestWithParam<MoeCase> {};

TEST_P(MoeDispatchGrad, InputAndGate) {
  const MoeCase& c = GetParam();
  const DispatchDims& d = c.d;
  const int64_t C = c.C, ldx = C + c.ldx_pad;
  std::vector<int32_t> idx;
  std::vector<float> scores, gate;
  random_routes(idx, scores, gate, d, 51);
  const int64_t max_rows = moe_max_rows(d);
  std::vector<int32_t> slot(d.N * d.K), row_token(max_rows);
  std::vector<int64_t> begin(d.E + 1), kept(d.E);
  const int64_t dropped =
      moe_assign(slot.data(), begin.data(), row_token.data(), kept.data(), idx.data(), scores.data(), d);
  const int64_t rows = begin[d.E];
  ASSERT_LE(rows, max_rows);
  if (c.expect_drops) {
    ASSERT_GT(dropped, 0) << "case meant to exercise capacity drops has none";
    // The other order keeps other assignments here, so the case checks its own routes.
    DispatchDims other = d;
    other.order = d.order == DropOrder::kScore ? DropOrder::kArrival : DropOrder::kScore;
    std::vector<int32_t> slot2(d.N * d.K), row_token2(max_rows);
    std::vector<int64_t> begin2(d.E + 1), kept2(d.E);
    moe_assign(slot2.data(), begin2.data(), row_token2.data(), kept2.data(), idx.data(), scores.data(), other);
    ASSERT_NE(slot2, slot) << "both drop orders keep the same assignments";
  } else {
    ASSERT_EQ(dropped, 0);
  }

  // Per-expert linear map ye[r] = W_e xe[r] between gather and combine.
  auto W = randn(d.E * C * C, 0.5f, 52);
  auto x = randn(d.N * ldx, 1.0f, 53), out0 = randn(d.N * C, 1.0f, 54), wl = randn(d.N * C, 1.0f, 55);
  std::vector<float> xe(rows * C), ye(rows * C), out(d.N * C);
  auto expert_map = [&](float* dst, const float* src, bool transpose) {
    for (int64_t e = 0; e < d.E; ++e)
      for (int64_t r = begin[e]; r < begin[e + 1]; ++r)
        for (int64_t i = 0; i < C; ++i) {
          double s = 0.0;
          for (int64_t j = 0; j < C; ++j)
            s += double(transpose ? W[(e * C + j) * C + i] : W[(e * C + i) * C + j]) * src[r * C + j];
          dst[r * C + i] = float(s);
        }
  };
  auto loss = [&] {
    moe_gather(xe.data(), x.data(), row_token.data(), rows, C, ldx);
    expert_map(ye.data(), xe.data(), false);
    out = out0;
    moe_combine(out.data(), ye.data(), slot.data(), gate.data(), d.N, d.K, C, c.beta);
    return weighted(wl, out.data());
  };
  loss();

  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> dye(rows * C, nan), dgate(d.N * d.K, nan), dxe(rows * C), dx(d.N * C, 0.0f);
  moe_combine_backward(dye.data(), dgate.data(), wl.data(), ye.data(), slot.data(), gate.data(),
                       row_token.data(), rows, d.N, d.K, C);
  for (int64_t r = 0; r < rows; ++r)
    if (row_token[r] < 0) {
      for (int64_t i = 0; i < C; ++i) ASSERT_EQ(dye[r * C + i], 0.0f) << "padding row " << r;
    }
  for (int64_t a = 0; a < d.N * d.K; ++a)
    if (slot[a] < 0) {
      EXPECT_EQ(dgate[a], 0.0f) << "dropped assignment " << a;
    }
  expert_map(dxe.data(), dye.data(), true);
  moe_gather_backward(dx.data(), dxe.data(), slot.data(), d.N, d.K, C);
  std::vector<float> dx_ld(d.N * ldx, 0.0f);  // padding columns of x are never read
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t i = 0; i < C; ++i) dx_ld[n * ldx + i] = dx[n * C + i];

  const auto opt = opts(1e-2f, kAll);
  expect_gradient_matches("moe dx", x.data(), d.N * ldx, dx_ld.data(), loss, opt);
  expect_gradient_matches("moe dgate", gate.data(), d.N * d.K, dgate.data(), loss, opt);
}

INSTANTIATE_TEST_SUITE_P(Table, MoeDispatchGrad, ::testing::ValuesIn(moe_cases()),
                         [](const auto& i) { return i.param.name; });

// ---------------------------------------------------------------- cross entropy

struct CeCase {
  int64_t R, V;
  float grad_scale;
};

std::vector<int32_t> ce_targets(int64_t R, int64_t V, uint64_t seed) {
  std::vector<int32_t> t(R);
  for (int64_t r = 0; r < R; ++r) t[r] = r % 3 == 1 ? -1 : int32_t(rand_u32(seed, uint64_t(r)) % uint32_t(V));
  return t;
}

class CrossEntropyGrad : public ::testing::TestWithParam<CeCase> {};

TEST_P(CrossEntropyGrad, LogitsWithIgnoredTargets) {
  const auto [R, V, scale] = GetParam();
  auto logits = randn(R * V, 2.0f, 61);
  const auto targets = ce_targets(R, V, 62);
  std::vector<float> dl = logits, losses(R), losses2(R);
  cross_entropy_forward_backward(losses.data(), dl.data(), targets.data(), R, V, scale);
  cross_entropy_forward(losses2.data(), logits.data(), targets.data(), R, V);
  for (int64_t r = 0; r < R; ++r) {
    EXPECT_NEAR(losses[r], losses2[r], 1e-6 * (1.0 + std::abs(losses2[r]))) << "row " << r;
    if (targets[r] < 0) {
      EXPECT_EQ(losses[r], 0.0f);
      for (int64_t v = 0; v < V; ++v) EXPECT_EQ(dl[r * V + v], 0.0f) << "ignored row " << r;
    }
  }
  auto loss = [&] {
    cross_entropy_forward(losses2.data(), logits.data(), targets.data(), R, V);
    double s = 0.0;
    for (int64_t r = 0; r < R; ++r) s += double(losses2[r]);
    return double(scale) * s;
  };
  expect_gradient_matches("cross_entropy dlogits", logits.data(), R * V, dl.data(), loss,
                          opts(1e-2f, kAll));
}

TEST_P(CrossEntropyGrad, TwoChunksEqualOneChunk) {
  const auto [R, V, scale] = GetParam();
  const auto logits = randn(R * V, 2.0f, 63);
  const auto targets = ce_targets(R, V, 64);
  std::vector<float> one = logits, two = logits, l1(R), l2(R);
  cross_entropy_forward_backward(l1.data(), one.data(), targets.data(), R, V, scale);
  const int64_t R1 = R / 3 + 1;
  cross_entropy_forward_backward(l2.data(), two.data(), targets.data(), R1, V, scale);
  cross_entropy_forward_backward(l2.data() + R1, two.data() + R1 * V, targets.data() + R1, R - R1, V,
                                 scale);
  EXPECT_EQ(0, std::memcmp(l1.data(), l2.data(), sizeof(float) * R));
  EXPECT_EQ(0, std::memcmp(one.data(), two.data(), sizeof(float) * R * V));
}

INSTANTIATE_TEST_SUITE_P(Table, CrossEntropyGrad,
                         ::testing::Values(CeCase{4, 11, 1.0f}, CeCase{6, 37, 0.37f},
                                           CeCase{7, 64, 2.5f}, CeCase{3, 2, 1.0f}),
                         [](const auto& i) {
                           return cat("R", i.param.R, "_V", i.param.V);
                         });

// ---------------------------------------------------------------- embedding

TEST(EmbeddingGrad, RepeatedTokens) {
  const int64_t V = 6, D = 4;
  const std::vector<int32_t> tokens{1, 3, 1, 1, 5, 0, 3, 1, 2, 1};  // 4 unused, 1 five times
  const int64_t N = int64_t(tokens.size());
  auto table = randn(V * D, 1.0f, 71), wl = randn(N * D, 1.0f, 72);
  std::vector<float> x(N * D), dtable(V * D, 0.0f);
  embedding_backward(dtable.data(), wl.data(), tokens.data(), N, D);
  auto loss = [&] {
    embedding_forward(x.data(), tokens.data(), table.data(), N, D);
    return weighted(wl, x.data());
  };
  expect_gradient_matches("embedding dtable", table.data(), V * D, dtable.data(), loss, opts(1e-2f, kAll));

  // Accumulates onto an existing gradient, in token order.
  auto acc = randn(V * D, 1.0f, 73);
  std::vector<float> ref = acc;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t j = 0; j < D; ++j) ref[tokens[n] * D + j] += wl[n * D + j];
  embedding_backward(acc.data(), wl.data(), tokens.data(), N, D);
  EXPECT_EQ(0, std::memcmp(acc.data(), ref.data(), sizeof(float) * V * D));
}

// ---------------------------------------------------------------- the checks can fail

// Number of non-fatal failures `f` reports (intercepted, so they do not fail
// this test).
int failures_of(const std::function<void()>& f) {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    f();
  }
  int n = 0;
  for (int i = 0; i < results.size(); ++i) n += results.GetTestPartResult(i).failed() ? 1 : 0;
  return n;
}

TEST(GradCheckSensitivity, WrongGradientsAreCaught) {
  {  // rmsnorm dx scaled by 1.1
    const int64_t N = 3, C = 16;
    auto x = randn(N * C, 1.0f, 81), w = randn(C, 0.3f, 82), wl = randn(N * C, 1.0f, 83);
    std::vector<float> y(N * C), rstd(N), dx(N * C), dw(C, 0.0f);
    rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5f);
    rmsnorm_backward(dx.data(), dw.data(), wl.data(), x.data(), w.data(), rstd.data(), N, C, 0.0f);
    for (float& g : dx) g *= 1.1f;
    auto loss = [&] {
      rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5f);
      return weighted(wl, y.data());
    };
    EXPECT_GT(failures_of([&] { expect_gradient_matches("dx", x.data(), N * C, dx.data(), loss, opts(1e-2f)); }), 0);
  }
  {  // attention dk of one key row off by a sign (a window off-by-one looks like this)
    const AttentionDims d{1, 2, 1, 19, 8, 3};
    const int64_t nq = 2 * 19 * 8, nk = 19 * 8;
    auto q = randn(nq, 1.0f, 84), k = randn(nk, 1.0f, 85), v = randn(nk, 1.0f, 86), wl = randn(nq, 1.0f, 87);
    std::vector<float> o(nq), lse(2 * 19), dq(nq), dk(nk), dv(nk);
    attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), d);
    attention_backward(dq.data(), dk.data(), dv.data(), wl.data(), q.data(), k.data(), v.data(), o.data(),
                       lse.data(), d);
    for (int64_t e = 0; e < 8; ++e) dk[5 * 8 + e] = -dk[5 * 8 + e];
    auto loss = [&] {
      attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), d);
      return weighted(wl, o.data());
    };
    EXPECT_GT(failures_of([&] { expect_gradient_matches("dk", k.data(), nk, dk.data(), loss, opts(5e-3f, 200)); }), 0);
  }
  {  // router backward without the aux term that the loss contains
    const RouterDims d{16, 6, 2, ScoreFn::kSigmoid, true, 8};
    auto logits = randn(d.N * d.E, 1.5f, 88), wg = randn(d.N * d.K, 1.0f, 89);
    std::vector<int32_t> idx(d.N * d.K), idx2(d.N * d.K);
    std::vector<float> gate(d.N * d.K), scores(d.N * d.E), gate2(d.N * d.K), scores2(d.N * d.E),
        dl(d.N * d.E);
    router_topk_forward(idx.data(), gate.data(), scores.data(), logits.data(), nullptr, d);
    router_backward(dl.data(), wg.data(), logits.data(), scores.data(), idx.data(), gate.data(), d, 0.0f, 0.05f);
    auto loss = [&] {
      router_topk_forward(idx2.data(), gate2.data(), scores2.data(), logits.data(), nullptr, d);
      double aux, z;
      router_losses(&aux, &z, logits.data(), scores2.data(), idx2.data(), d);
      return weighted(wg, gate2.data()) + 0.3 * aux + 0.05 * z;
    };
    auto same = [&] { return idx2 == idx; };
    EXPECT_GT(failures_of([&] {
                expect_gradient_matches("dlogits", logits.data(), d.N * d.E, dl.data(), loss, opts(1e-3f, 96), same);
              }),
              0);
  }
  {  // cross entropy gradient missing grad_scale
    const int64_t R = 4, V = 11;
    auto logits = randn(R * V, 2.0f, 90);
    const auto targets = ce_targets(R, V, 91);
    std::vector<float> dl = logits, losses(R);
    cross_entropy_forward_backward(losses.data(), dl.data(), targets.data(), R, V, 1.0f);
    auto loss = [&] {
      cross_entropy_forward(losses.data(), logits.data(), targets.data(), R, V);
      double s = 0.0;
      for (float l : losses) s += 0.9 * double(l);
      return s;
    };
    EXPECT_GT(failures_of([&] { expect_gradient_matches("dlogits", logits.data(), R * V, dl.data(), loss, opts(1e-2f)); }), 0);
  }
}

}  // namespace
}  // namespace mt
