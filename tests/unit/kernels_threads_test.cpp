// kernels_threads_test.cpp — thread-count invariance. Every non-GEMM kernel
// must give bitwise-identical results with 1 and 2 OpenMP threads. GEMM
// (oneDNN) is measured on model shapes: bitwise equality is reported per
// shape, and at least 1e-5 relative agreement is required.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "core/rng.h"
#include "kernels/cpu/adamw.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/moe_dispatch.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/router.h"
#include "kernels/cpu/swiglu.h"

namespace mt {
namespace {

std::vector<float> randn(int64_t n, float std, uint64_t seed, uint64_t stream = 0) {
  std::vector<float> v(static_cast<size_t>(n));
  fill_normal(v.data(), n, std, seed, stream);
  return v;
}

template <class... A>
std::string cat(const A&... a) {
  std::ostringstream s;
  (s << ... << a);
  return s.str();
}

// Byte image of everything a kernel run produced.
using Bytes = std::vector<unsigned char>;
template <class T>
void append(Bytes& out, const std::vector<T>& v) {
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  out.insert(out.end(), p, p + v.size() * sizeof(T));
}

class Threads : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = omp_get_max_threads(); }
  void TearDown() override { omp_set_num_threads(saved_); }

  // Runs `f` with 1 and with 2 threads and requires identical bytes.
  void expect_invariant(const char* what, const std::function<Bytes()>& f) {
    omp_set_num_threads(1);
    const Bytes one = f();
    omp_set_num_threads(2);
    const Bytes two = f();
    ASSERT_FALSE(one.empty());
    ASSERT_EQ(one.size(), two.size()) << what;
    EXPECT_EQ(0, std::memcmp(one.data(), two.data(), one.size())) << what << " differs between 1 and 2 threads";
  }

 private:
  int saved_ = 1;
};

TEST_F(Threads, TwoThreadsAreAvailable) {
  omp_set_num_threads(2);
  int n = 0;
#pragma omp parallel
  {
#pragma omp single
    n = omp_get_num_threads();
  }
  EXPECT_EQ(n, 2) << "the invariance checks below need a real second thread";
}

TEST_F(Threads, RmsNorm) {
  const int64_t N = 384, C = 200;  // C not a multiple of the 16-column block
  const auto x = randn(N * C, 1.0f, 1), w = randn(C, 1.0f, 2), dy = randn(N * C, 1.0f, 3);
  const auto dx_prior = randn(N * C, 1.0f, 4), dw_prior = randn(C, 1.0f, 5);
  expect_invariant("rmsnorm", [&] {
    std::vector<float> y(N * C), rstd(N), dx(N * C), dw = dw_prior, dx1 = dx_prior;
    rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5f);
    rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), N, C, 0.0f);
    rmsnorm_backward(dx1.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), N, C, 1.0f);
    Bytes b;
    append(b, y), append(b, rstd), append(b, dx), append(b, dx1), append(b, dw);
    return b;
  });
}

TEST_F(Threads, Attention) {
  for (int64_t window : {0, 64}) {
    SCOPED_TRACE(window);
    const AttentionDims d{2, 4, 2, 211, 32, window};
    const int64_t nq = d.B * d.H * d.T * d.Dh, nk = d.B * d.Hkv * d.T * d.Dh;
    const auto q = randn(nq, 1.0f, 11), k = randn(nk, 1.0f, 12), v = randn(nk, 1.0f, 13),
               dout = randn(nq, 1.0f, 14);
    expect_invariant("attention", [&] {
      std::vector<float> o(nq), lse(d.B * d.H * d.T), dq(nq), dk(nk), dv(nk);
      attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), d);
      attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(), v.data(),
                         o.data(), lse.data(), d);
      Bytes b;
      append(b, o), append(b, lse), append(b, dq), append(b, dk), append(b, dv);
      return b;
    });
  }
}

TEST_F(Threads, Router) {
  for (ScoreFn fn : {ScoreFn::kSoftmax, ScoreFn::kSigmoid}) {
    const RouterDims d{2048, 64, 4, fn, fn == ScoreFn::kSigmoid, 512};
    const auto logits = randn(d.N * d.E, 1.0f, 21), bias = randn(d.E, 0.01f, 22),
               dgate = randn(d.N * d.K, 1.0f, 23);
    expect_invariant("router", [&] {
      std::vector<int32_t> idx(d.N * d.K);
      std::vector<float> gate(d.N * d.K), scores(d.N * d.E), dl(d.N * d.E);
      std::vector<double> losses(2);
      router_topk_forward(idx.data(), gate.data(), scores.data(), logits.data(), bias.data(), d);
      router_losses(&losses[0], &losses[1], logits.data(), scores.data(), idx.data(), d);
      router_backward(dl.data(), dgate.data(), logits.data(), scores.data(), idx.data(), gate.data(), d,
                      0.01f, 0.001f);
      Bytes b;
      append(b, idx), append(b, gate), append(b, scores), append(b, losses), append(b, dl);
      return b;
    });
  }
}

TEST_F(Threads, MoeDispatch) {
  const DispatchDims d{2048, 16, 2, 512, 80, 16};
  const int64_t C = 96;
  // Routes from the router kernel on fixed logits (computed once, 1 thread).
  const RouterDims rd{d.N, d.E, d.K, ScoreFn::kSoftmax, true, d.group};
  const auto logits = randn(d.N * d.E, 1.0f, 31);
  std::vector<int32_t> idx(d.N * d.K);
  std::vector<float> gate(d.N * d.K), scores(d.N * d.E);
  router_topk_forward(idx.data(), gate.data(), scores.data(), logits.data(), nullptr, rd);
  const auto x = randn(d.N * C, 1.0f, 32), dout = randn(d.N * C, 1.0f, 33), out0 = randn(d.N * C, 1.0f, 34);
  const int64_t max_rows = moe_max_rows(d);
  const auto ye_fill = randn(max_rows * C, 1.0f, 35);
  expect_invariant("moe dispatch", [&] {
    std::vector<int32_t> slot(d.N * d.K), row_token(max_rows);
    std::vector<int64_t> begin(d.E + 1), kept(d.E), dropped(1);
    dropped[0] = moe_assign(slot.data(), begin.data(), row_token.data(), kept.data(), idx.data(),
                            scores.data(), d);
    const int64_t rows = begin[d.E];
    std::vector<float> xe(rows * C), out = out0, dye(rows * C), dgate(d.N * d.K), dx(d.N * C, 0.0f);
    std::vector<float> ye(ye_fill.begin(), ye_fill.begin() + rows * C);  // stands in for the experts
    moe_gather(xe.data(), x.data(), row_token.data(), rows, C, C);
    moe_combine(out.data(), ye.data(), slot.data(), gate.data(), d.N, d.K, C, 1.0f);
    moe_combine_backward(dye.data(), dgate.data(), dout.data(), ye.data(), slot.data(), gate.data(),
                         row_token.data(), rows, d.N, d.K, C);
    moe_gather_backward(dx.data(), dye.data(), slot.data(), d.N, d.K, C);
    row_token.resize(rows);
    Bytes b;
    append(b, slot), append(b, begin), append(b, kept), append(b, dropped), append(b, row_token);
    append(b, xe), append(b, out), append(b, dye), append(b, dgate), append(b, dx);
    return b;
  });
}

TEST_F(Threads, CrossEntropy) {
  const int64_t R = 96, V = 1000;
  const auto logits = randn(R * V, 2.0f, 41);
  std::vector<int32_t> targets(R);
  for (int64_t r = 0; r < R; ++r) targets[r] = r % 7 == 3 ? -1 : int32_t((r * 131) % V);
  expect_invariant("cross entropy", [&] {
    std::vector<float> dl = logits, losses(R), eval(R);
    cross_entropy_forward(eval.data(), logits.data(), targets.data(), R, V);
    cross_entropy_forward_backward(losses.data(), dl.data(), targets.data(), R, V, 1.0f / 96.0f);
    Bytes b;
    append(b, eval), append(b, losses), append(b, dl);
    return b;
  });
}

TEST_F(Threads, AdamW) {
  const int64_t n = 100003;  // above the kernel's parallel threshold, odd tail
  const auto p0 = randn(n, 1.0f, 51), g = randn(n, 1.0f, 52), m0 = randn(n, 0.1f, 53);
  auto v0 = randn(n, 0.1f, 54);
  for (float& x : v0) x = x * x;
  expect_invariant("adamw", [&] {
    std::vector<float> p = p0, m = m0, v = v0;
    for (int64_t step = 1; step <= 3; ++step)
      adamw_update(p.data(), m.data(), v.data(), g.data(), n, AdamWParams{3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.7f, step});
    Bytes b;
    append(b, p), append(b, m), append(b, v);
    return b;
  });
}

TEST_F(Threads, ElementwiseAndLayout) {
  const int64_t M = 512, F = 384, BH = 16, T = 128, Dh = 64, Vocab = 300, D = 128, N = 1024;
  const auto h = randn(M * 2 * F, 1.0f, 61), dz = randn(M * F, 1.0f, 62), x = randn(BH * T * Dh, 1.0f, 63),
             table = randn(Vocab * D, 1.0f, 64), dxe = randn(N * D, 1.0f, 65);
  std::vector<int32_t> tokens(N);
  for (int64_t i = 0; i < N; ++i) tokens[i] = int32_t((i * i + 7) % Vocab);
  std::vector<float> cs(T * Dh / 2), sn(T * Dh / 2);
  rope_tables(cs.data(), sn.data(), T, Dh, 10000.0);
  expect_invariant("swiglu, rope, embedding", [&] {
    std::vector<float> z(M * F), dh(M * 2 * F), y(x.size()), dx(x.size()), e(N * D), dtable(Vocab * D, 0.0f);
    swiglu_forward(z.data(), h.data(), M, F);
    swiglu_backward(dh.data(), dz.data(), h.data(), M, F);
    rope_forward(y.data(), x.data(), cs.data(), sn.data(), BH, T, Dh);
    rope_backward(dx.data(), y.data(), cs.data(), sn.data(), BH, T, Dh);
    embedding_forward(e.data(), tokens.data(), table.data(), N, D);
    embedding_backward(dtable.data(), dxe.data(), tokens.data(), N, D);
    Bytes b;
    append(b, z), append(b, dh), append(b, y), append(b, dx), append(b, e), append(b, dtable);
    return b;
  });
}

// GEMM through oneDNN: record which shapes are bitwise thread-count invariant.
struct GemmRun {
  std::string form;
  std::function<void(std::vector<float>&)> run;
  int64_t out_size;
};

TEST_F(Threads, GemmModelShapes) {
  std::vector<std::string> differing;
  struct Shape {
    int64_t M, N, K;
  };
  for (MatmulPrecision p : {MatmulPrecision::kFp32, MatmulPrecision::kBf16})
    for (Shape s : {Shape{4096, 768, 512}, Shape{4096, 512, 768}, Shape{1024, 2048, 768}}) {
      const auto x = randn(s.M * s.K, 1.0f, 71), W = randn(s.N * s.K, 0.05f, 72), dy = randn(s.M * s.N, 1.0f, 73);
      const std::vector<GemmRun> runs{
          {"linear_forward", [&](std::vector<float>& o) { linear_forward(o.data(), x.data(), W.data(), s.M, s.N, s.K, p); },
           s.M * s.N},
          {"linear_backward_input",
           [&](std::vector<float>& o) { linear_backward_input(o.data(), dy.data(), W.data(), s.M, s.N, s.K, 0.0f, p); },
           s.M * s.K},
          {"linear_backward_weight",
           [&](std::vector<float>& o) {
             std::fill(o.begin(), o.end(), 0.0f);
             linear_backward_weight(o.data(), dy.data(), x.data(), s.M, s.N, s.K, p);
           },
           s.N * s.K},
      };
      for (const GemmRun& r : runs) {
        std::vector<float> one(r.out_size), two(r.out_size), two_again(r.out_size);
        // 2 threads first: the cached primitive is created under 2 threads and
        // then also executed under 1 (as a thread-count change would do).
        omp_set_num_threads(2);
        r.run(two);
        omp_set_num_threads(1);
        r.run(one);
        omp_set_num_threads(2);
        r.run(two_again);
        EXPECT_EQ(0, std::memcmp(two.data(), two_again.data(), sizeof(float) * r.out_size))
            << r.form << ": not run-to-run deterministic at 2 threads";
        double max_abs = 0, max_diff = 0;
        int64_t n_diff = 0;
        for (int64_t i = 0; i < r.out_size; ++i) {
          max_abs = std::max(max_abs, double(std::abs(two[i])));
          const double dd = std::abs(double(one[i]) - double(two[i]));
          max_diff = std::max(max_diff, dd);
          n_diff += one[i] != two[i];
        }
        const std::string name =
            cat(r.form, " ", s.M, "x", s.N, "x", s.K, p == MatmulPrecision::kFp32 ? " fp32" : " bf16");
        std::printf("[ gemm     ] %-48s 1 vs 2 threads: %s (%lld elements differ, max |diff| / max |y| = %.3g)\n",
                    name.c_str(), n_diff ? "DIFFERENT" : "bitwise identical", (long long)n_diff,
                    max_abs > 0 ? max_diff / max_abs : 0.0);
        if (n_diff) differing.push_back(name);
        EXPECT_LE(max_diff, 1e-5 * max_abs) << name;
      }
    }
  std::printf("[ gemm     ] %zu of 18 shape/form/precision combinations differ between 1 and 2 threads\n",
              differing.size());
  RecordProperty("gemm_thread_variant_shapes", std::to_string(differing.size()));
}

}  // namespace
}  // namespace mt
