// gated_delta_gradcheck_test.cpp — central-difference checks of every gated-delta op: the chunked
// recurrence (q, k, v, g, beta; chunks that do and do not divide T; the chunked backward and the
// sequential reference), L2 norm, the decay and write gates, the SiLU output gate and the head
// gather. Loss L = sum_i w_i y_i with fixed random w, so dL/dy = w feeds each backward (as in
// kernels_gradcheck_test.cpp).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cpu/delta_gates.h"
#include "kernels/cpu/gated_delta.h"
#include "support/gradcheck.h"
#include "support/random.h"

namespace mt {
namespace {

using testing::expect_gradient_matches;
using testing::GradCheckOptions;
using testing::randn;
using testing::weighted;


const bool one_thread = [] {
  omp_set_num_threads(1);
  return true;
}();

GradCheckOptions opts(float eps, int samples) {
  GradCheckOptions o;
  o.eps = eps;
  o.samples = samples;
  return o;
}

// Document starts for document masking: every `every` steps, from step 2 (mid-chunk, and on a chunk's start).
std::vector<int32_t> starts_every(const GatedDeltaDims& d, int64_t every) {
  std::vector<int32_t> s(size_t(d.B * d.T));
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t t = 0; t < d.T; ++t) s[size_t(b * d.T + t)] = int32_t(t < 2 ? 0 : 2 + (t - 2) / every * every);
  return s;
}

class GatedDeltaGrad : public ::testing::TestWithParam<GatedDeltaDims> {};

// Both backwards: the chunked one the layer runs and the sequential reference.
enum class Backward { kChunked, kSequential };

void check_gated_delta_gradient(const GatedDeltaDims& d, Backward which = Backward::kChunked) {
  const int64_t rows = d.B * d.H * d.T, nk = rows * d.Dk, nv = rows * d.Dv;
  auto q = randn(nk, 0.4f, 1), k = randn(nk, 0.4f, 2), v = randn(nv, 1.0f, 3);
  auto g = randn(rows, 0.2f, 4), beta = randn(rows, 1.0f, 5);
  for (auto& x : g) x = -0.1f - std::abs(x);
  for (auto& x : beta) x = 1.0f / (1.0f + std::exp(-x));
  const auto w = randn(nv, 1.0f, 6);
  std::vector<float> o(nv), st(d.B * d.H * gated_delta_chunks(d) * d.Dv * d.Dk);
  auto loss = [&] {
    gated_delta_forward(o.data(), st.data(), q.data(), k.data(), v.data(), g.data(), beta.data(), d);
    return weighted(w, o.data());
  };
  loss();
  std::vector<float> dq(nk), dk(nk), dv(nv), dg(rows), db(rows);
  auto backward = which == Backward::kChunked ? gated_delta_backward : gated_delta_backward_sequential;
  backward(dq.data(), dk.data(), dv.data(), dg.data(), db.data(), w.data(), q.data(), k.data(), v.data(), g.data(),
           beta.data(), st.data(), d);
  const GradCheckOptions o1 = opts(1e-3f, 64);
  expect_gradient_matches("q", q.data(), nk, dq.data(), loss, o1);
  expect_gradient_matches("k", k.data(), nk, dk.data(), loss, o1);
  expect_gradient_matches("v", v.data(), nv, dv.data(), loss, o1);
  expect_gradient_matches("g", g.data(), rows, dg.data(), loss, o1);
  expect_gradient_matches("beta", beta.data(), rows, db.data(), loss, o1);
}

TEST_P(GatedDeltaGrad, AllInputs) { check_gated_delta_gradient(GetParam()); }
TEST_P(GatedDeltaGrad, AllInputsSequential) { check_gated_delta_gradient(GetParam(), Backward::kSequential); }

// Document masking: the state restarts at each document start (the gate there has no effect).
TEST_P(GatedDeltaGrad, AllInputsWithDocumentStarts) {
  GatedDeltaDims d = GetParam();
  const std::vector<int32_t> starts = starts_every(d, 3);
  d.doc_start = starts.data();
  check_gated_delta_gradient(d);
  check_gated_delta_gradient(d, Backward::kSequential);
}

INSTANTIATE_TEST_SUITE_P(Table, GatedDeltaGrad,
                         ::testing::Values(GatedDeltaDims{1, 1, 12, 4, 4, 4}, GatedDeltaDims{2, 2, 11, 8, 6, 4},
                                           GatedDeltaDims{1, 2, 9, 5, 7, 16}, GatedDeltaDims{1, 1, 7, 6, 6, 1}),
                         [](const ::testing::TestParamInfo<GatedDeltaDims>& i) {
                           const GatedDeltaDims& d = i.param;
                           return "B" + std::to_string(d.B) + "H" + std::to_string(d.H) + "T" + std::to_string(d.T) +
                                  "Dk" + std::to_string(d.Dk) + "Dv" + std::to_string(d.Dv) + "C" + std::to_string(d.C);
                         });

TEST(DeltaGatesGrad, L2NormOfHeads) {
  // Heads of 3 in columns [0, 6) of a token-major block 8 wide; the other columns' gradient stays 0.
  const int64_t B = 2, T = 3, H = 2, Dh = 3, ld = 8, N = B * T;
  auto x = randn(N * ld, 1.0f, 11);
  const auto w = randn(N * H * Dh, 1.0f, 12);
  std::vector<float> y(N * H * Dh), r(N * H), dx(N * ld, 0.0f);
  auto loss = [&] {
    l2norm_heads_forward(y.data(), r.data(), x.data(), ld, B, T, H, Dh, 1e-6f);
    return weighted(w, y.data());
  };
  loss();
  l2norm_heads_backward(dx.data(), ld, w.data(), y.data(), r.data(), B, T, H, Dh);
  expect_gradient_matches("x", x.data(), N * ld, dx.data(), loss, opts(1e-3f, 1 << 30));
}

TEST(DeltaGatesGrad, Gates) {
  const int64_t B = 2, T = 5, H = 3, ld = 8;  // a in columns [0, H), b in [4, 4 + H)
  auto proj = randn(B * T * ld, 1.0f, 21), A_log = randn(H, 0.5f, 22), dt = randn(H, 1.0f, 23);
  const auto wg = randn(B * H * T, 1.0f, 24), wb = randn(B * H * T, 1.0f, 25);
  std::vector<float> g(B * H * T), beta(B * H * T), dproj(B * T * ld, 0.0f), dA(H, 0.0f), ddt(H, 0.0f);
  auto loss = [&] {
    delta_gates_forward(g.data(), beta.data(), proj.data(), proj.data() + 4, ld, A_log.data(), dt.data(), B, T, H);
    return weighted(wg, g.data()) + weighted(wb, beta.data());
  };
  loss();
  delta_gates_backward(dproj.data(), dproj.data() + 4, dA.data(), ddt.data(), wg.data(), wb.data(), proj.data(),
                       proj.data() + 4, ld, A_log.data(), dt.data(), B, T, H);
  const GradCheckOptions all = opts(1e-3f, 1 << 30);
  expect_gradient_matches("a|b", proj.data(), B * T * ld, dproj.data(), loss, all);
  expect_gradient_matches("A_log", A_log.data(), H, dA.data(), loss, all);
  expect_gradient_matches("dt_bias", dt.data(), H, ddt.data(), loss, all);
}

TEST(DeltaGatesGrad, SiluGateAndGather) {
  const int64_t B = 2, T = 3, H = 2, Dh = 3, ld = 10, N = B * T, C = H * Dh;
  auto x = randn(N * C, 1.0f, 31), zb = randn(N * ld, 1.5f, 32);
  const auto w = randn(N * C, 1.0f, 33);
  std::vector<float> y(N * C), heads(N * C), dx(N * C), dzb(N * ld, 0.0f), dh(N * C);
  // y = gather(x * silu(z)) (z in columns [2, 2 + C) of zb), so both layouts are exercised.
  auto loss = [&] {
    silu_gate_forward(y.data(), x.data(), zb.data() + 2, ld, N, C);
    gather_heads(heads.data(), y.data(), C, B, T, H, Dh);
    return weighted(w, heads.data());
  };
  loss();
  gather_heads_backward(dh.data(), w.data(), C, B, T, H, Dh);
  silu_gate_backward(dx.data(), dzb.data() + 2, dh.data(), x.data(), zb.data() + 2, ld, N, C);
  const GradCheckOptions all = opts(1e-3f, 1 << 30);
  expect_gradient_matches("x", x.data(), N * C, dx.data(), loss, all);
  expect_gradient_matches("z", zb.data(), N * ld, dzb.data(), loss, all);
}

}  // namespace
}  // namespace mt
