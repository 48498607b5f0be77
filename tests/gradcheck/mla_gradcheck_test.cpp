// mla_gradcheck_test.cpp — per-op gradients of the pieces multi-head latent
// attention (model/mla_block.h) adds, against central differences with the
// loss L = sum_i w_i y_i (fixed random w): attention with a value width Dv
// apart from the q/k width, RoPE on part of each row, the per-head key/value
// assembly with its shared RoPE key, and the column split. The whole block is
// checked inside the model (model_gradcheck_test.cpp, cases mla_*).
#include <gtest/gtest.h>
#include <omp.h>

#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/mla_heads.h"
#include "kernels/cpu/rope.h"
#include "support/gradcheck.h"
#include "support/random.h"

namespace mt {
namespace {

using testing::expect_gradient_matches;
using testing::GradCheckOptions;
using testing::randn;
using testing::weighted;


GradCheckOptions opts(float eps, int samples) {
  GradCheckOptions o;
  o.eps = eps;
  o.samples = samples;
  return o;
}

constexpr int kAll = 1 << 30;

// Many tiny forwards: one thread (invariance is kernels_threads_test's job).
const bool one_thread = [] {
  omp_set_num_threads(1);
  return true;
}();

struct AttnCase {
  int64_t T, Dh, Dv, window;
};

class AttentionValueDimGrad : public ::testing::TestWithParam<AttnCase> {};

TEST_P(AttentionValueDimGrad, QueryKeyValue) {
  const AttnCase c = GetParam();
  const AttentionDims d{2, 3, 3, c.T, c.Dh, c.window, c.Dv};
  const int64_t nq = d.B * d.H * d.T * d.Dh, nv = d.B * d.H * d.T * d.Dv;
  auto q = randn(nq, 1.0f, 31), k = randn(nq, 1.0f, 32), v = randn(nv, 1.0f, 33), wl = randn(nv, 1.0f, 34);
  std::vector<float> o(nv), lse(d.B * d.H * d.T);
  attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), d);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> dq(nq, nan), dk(nq, nan), dv(nv, nan);  // all written by backward
  attention_backward(dq.data(), dk.data(), dv.data(), wl.data(), q.data(), k.data(), v.data(), o.data(),
                     lse.data(), d);
  std::vector<float> o2(nv), lse2(lse.size());
  auto loss = [&] {
    attention_forward(o2.data(), lse2.data(), q.data(), k.data(), v.data(), d);
    return weighted(wl, o2.data());
  };
  const auto opt = opts(5e-3f, 160);
  expect_gradient_matches("attention dq", q.data(), nq, dq.data(), loss, opt);
  expect_gradient_matches("attention dk", k.data(), nq, dk.data(), loss, opt);
  expect_gradient_matches("attention dv", v.data(), nv, dv.data(), loss, opt);
}

INSTANTIATE_TEST_SUITE_P(Table, AttentionValueDimGrad,
                         ::testing::Values(AttnCase{19, 12, 8, 0}, AttnCase{37, 6, 10, 5}, AttnCase{37, 6, 5, 0},
                                           AttnCase{5, 4, 3, 2}),
                         [](const auto& i) {
                           std::ostringstream s;
                           s << "T" << i.param.T << "_Dh" << i.param.Dh << "_Dv" << i.param.Dv << "_w"
                             << i.param.window;
                           return s.str();
                         });

TEST(RopePartGrad, RotatesOnlyThePartAndItsBackwardIsTheTranspose) {
  const int64_t BH = 3, T = 7, Dr = 4, Dn = 3, ld = Dn + Dr, n = BH * T * ld;
  std::vector<float> cs(T * Dr / 2), sn(T * Dr / 2);
  rope_tables(cs.data(), sn.data(), T, Dr, 100.0);
  auto x = randn(n, 1.0f, 41), wl = randn(n, 1.0f, 42);
  // Forward equals rope_forward on the gathered part; the rest is untouched.
  std::vector<float> y = x, part(BH * T * Dr), ref(BH * T * Dr);
  rope_forward_part(y.data() + Dn, cs.data(), sn.data(), BH, T, Dr, ld);
  for (int64_t r = 0; r < BH * T; ++r)
    for (int64_t e = 0; e < Dr; ++e) part[r * Dr + e] = x[r * ld + Dn + e];
  rope_forward(ref.data(), part.data(), cs.data(), sn.data(), BH, T, Dr);
  for (int64_t r = 0; r < BH * T; ++r) {
    for (int64_t e = 0; e < Dn; ++e) ASSERT_EQ(y[r * ld + e], x[r * ld + e]);
    for (int64_t e = 0; e < Dr; ++e) ASSERT_EQ(y[r * ld + Dn + e], ref[r * Dr + e]);
  }
  std::vector<float> dx = wl;
  rope_backward_part(dx.data() + Dn, cs.data(), sn.data(), BH, T, Dr, ld);
  std::vector<float> y2(n);
  auto loss = [&] {
    y2 = x;
    rope_forward_part(y2.data() + Dn, cs.data(), sn.data(), BH, T, Dr, ld);
    return weighted(wl, y2.data());
  };
  expect_gradient_matches("rope_part dx", x.data(), n, dx.data(), loss, opts(1e-2f, kAll));
}

TEST(MlaHeadsGrad, SharedRopeKeyGradientIsTheSumOverHeads) {
  const MlaHeadDims d{2, 5, 3, 4, 2, 3};
  const int64_t N = d.B * d.T, Dqk = d.Dn + d.Dr;
  const int64_t nkv = N * d.H * (d.Dn + d.Dv), nk = N * d.H * Dqk, nv = N * d.H * d.Dv;
  auto kv = randn(nkv, 1.0f, 51), kr = randn(N * d.Dr, 1.0f, 52);
  auto wk = randn(nk, 1.0f, 53), wv = randn(nv, 1.0f, 54);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> dkv(nkv, nan), dkr(N * d.Dr, nan);  // all written
  mla_kv_heads_backward(dkv.data(), dkr.data(), wk.data(), wv.data(), d);
  std::vector<float> k(nk), v(nv);
  auto loss = [&] {
    mla_kv_heads(k.data(), v.data(), kv.data(), kr.data(), d);
    return weighted(wk, k.data()) + weighted(wv, v.data());
  };
  expect_gradient_matches("mla_kv_heads dkv", kv.data(), nkv, dkv.data(), loss, opts(1e-2f, kAll));
  expect_gradient_matches("mla_kv_heads dk_rope", kr.data(), N * d.Dr, dkr.data(), loss, opts(1e-2f, kAll));
  // Every head's key ends with the same RoPE key.
  loss();
  for (int64_t h = 0; h < d.H; ++h)
    for (int64_t e = 0; e < d.Dr; ++e) EXPECT_EQ(k[((1 * d.H + h) * d.T + 2) * Dqk + d.Dn + e], kr[(d.T + 2) * d.Dr + e]);
}

TEST(SplitColumns, ConcatIsItsInverse) {
  const int64_t N = 5, Da = 3, Db = 2;
  auto x = randn(N * (Da + Db), 1.0f, 61);
  std::vector<float> a(N * Da), b(N * Db), back(x.size());
  split_columns(a.data(), b.data(), x.data(), N, Da, Db);
  EXPECT_EQ(a[1 * Da + 2], x[1 * (Da + Db) + 2]);
  EXPECT_EQ(b[4 * Db + 1], x[4 * (Da + Db) + Da + 1]);
  concat_columns(back.data(), a.data(), b.data(), N, Da, Db);
  EXPECT_EQ(back, x);
  // Inside rows of ld values (MLA's projection output): the columns after Da + Db are neither read nor written.
  const int64_t ld = Da + Db + 4;
  auto wide = randn(N * ld, 1.0f, 62);
  std::vector<float> a2(N * Da), b2(N * Db), wide_back(wide.size(), 7.0f);
  split_columns(a2.data(), b2.data(), wide.data(), N, Da, Db, ld);
  EXPECT_EQ(a2[3 * Da + 1], wide[3 * ld + 1]);
  EXPECT_EQ(b2[2 * Db + 1], wide[2 * ld + Da + 1]);
  concat_columns(wide_back.data(), a2.data(), b2.data(), N, Da, Db, ld);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t j = 0; j < ld; ++j) EXPECT_EQ(wide_back[n * ld + j], j < Da + Db ? wide[n * ld + j] : 7.0f);
}

}  // namespace
}  // namespace mt
