// kernels_threads_test.cpp — thread-count invariance. Every non-GEMM kernel
// must give bitwise-identical results with 1 and 2 OpenMP threads. GEMM
// (oneDNN) is measured on model shapes: bitwise equality is reported per
// shape, and at least 1e-5 relative agreement is required.
#include <gtest/gtest.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "core/rng.h"
#include "kernels/cpu/adamw.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_matmul.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/mla_heads.h"
#include "kernels/cpu/moe_dispatch.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/router.h"
#include "kernels/cpu/swiglu.h"
#include "support/random.h"

namespace mt {
namespace {

using testing::randn;

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
  // C not a multiple of the 16-column block (narrow rows: blocks of 16 on two
  // threads, runs of 64-column blocks on one), then wide rows in runs of
  // 64-column blocks, ragged, and a run longer than one sweep's 1,024 columns.
  for (const auto [N, C] : {std::pair<int64_t, int64_t>{384, 200}, {384, 600}, {40, 2600}}) {
    SCOPED_TRACE(C);
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

// The matmul-tiled kernel in both precisions: GQA with token-major output,
// and H = Hkv with Dv != Dh (multi-head latent attention's shape). Its
// products run through gemm_on_thread, planned for one thread whatever the
// caller's count.
TEST_F(Threads, AttentionMatmul) {
  for (MatmulPrecision p : {MatmulPrecision::kFp32, MatmulPrecision::kBf16})
    for (int64_t window : {0, 64})
      for (const AttentionDims& shape : {AttentionDims{2, 4, 1, 211, 32, window, 0, true},
                                         AttentionDims{2, 4, 4, 211, 24, window, 16, false}}) {
        SCOPED_TRACE(cat(p == MatmulPrecision::kFp32 ? "fp32" : "bf16", " window ", window, " Hkv ", shape.Hkv));
        const AttentionDims d = shape;
        const int64_t nq = d.B * d.H * d.T * d.Dh, nk = d.B * d.Hkv * d.T * d.Dh;
        const int64_t no = d.B * d.H * d.T * d.v_dim(), nv = d.B * d.Hkv * d.T * d.v_dim();
        const auto q = randn(nq, 1.0f, 41), k = randn(nk, 1.0f, 42), v = randn(nv, 1.0f, 43),
                   dout = randn(no, 1.0f, 44);
        expect_invariant("matmul attention", [&] {
          std::vector<float> o(no), lse(d.B * d.H * d.T), dq(nq), dk(nk), dv(nv);
          attention_matmul_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), d, p);
          attention_matmul_backward(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(), v.data(),
                                    o.data(), lse.data(), d, p);
          Bytes b;
          append(b, o), append(b, lse), append(b, dq), append(b, dk), append(b, dv);
          return b;
        });
      }
}

// Multi-head latent attention's pieces: attention with Dv != Dh over H = Hkv
// heads, RoPE on part of each row, and the per-head keys whose shared RoPE
// part sums its gradient over heads.
TEST_F(Threads, MlaAttention) {
  for (int64_t window : {0, 64}) {
    SCOPED_TRACE(window);
    const AttentionDims d{2, 4, 4, 211, 24, window, 16};
    const MlaHeadDims hd{2, 211, 4, 16, 8, 16};
    const int64_t N = d.B * d.T, nq = N * d.H * d.Dh, nv = N * d.H * d.Dv;
    const auto q = randn(nq, 1.0f, 31), kv = randn(N * d.H * (hd.Dn + hd.Dv), 1.0f, 32),
               kr = randn(N * hd.Dr, 1.0f, 33), dout = randn(nv, 1.0f, 34);
    std::vector<float> cs(d.T * hd.Dr / 2), sn(d.T * hd.Dr / 2);
    rope_tables(cs.data(), sn.data(), d.T, hd.Dr, 10000.0);
    expect_invariant("mla attention", [&] {
      std::vector<float> qr = q, k(nq), v(nv), o(nv), lse(N * d.H), dq(nq), dk(nq), dv(nv);
      std::vector<float> dkv(kv.size()), dkr(kr.size());
      rope_forward_part(qr.data() + hd.Dn, cs.data(), sn.data(), d.B * d.H, d.T, hd.Dr, d.Dh);
      mla_kv_heads(k.data(), v.data(), kv.data(), kr.data(), hd);
      attention_forward(o.data(), lse.data(), qr.data(), k.data(), v.data(), d);
      attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), qr.data(), k.data(), v.data(), o.data(),
                         lse.data(), d);
      rope_backward_part(dq.data() + hd.Dn, cs.data(), sn.data(), d.B * d.H, d.T, hd.Dr, d.Dh);
      mla_kv_heads_backward(dkv.data(), dkr.data(), dk.data(), dv.data(), hd);
      Bytes b;
      append(b, o), append(b, lse), append(b, dq), append(b, dkv), append(b, dkr);
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
  // Both drop orders; arrival order in groups of two sequences of 256.
  for (const DropOrder order : {DropOrder::kScore, DropOrder::kArrival}) {
    DispatchDims d{2048, 16, 2, 512, 80, 16};
    d.order = order;
    d.seq_len = 256;
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
    expect_invariant(order == DropOrder::kScore ? "moe dispatch" : "moe dispatch (arrival order)", [&] {
      std::vector<int32_t> slot(d.N * d.K), row_token(max_rows);
      std::vector<int64_t> begin(d.E + 1), kept(d.E), dropped(1);
      dropped[0] = moe_assign(slot.data(), begin.data(), row_token.data(), kept.data(), idx.data(), scores.data(), d);
      const int64_t rows = begin[d.E];
      std::vector<float> xe(rows * C), out = out0, dye(rows * C), dgate(d.N * d.K), dx(d.N * C, 0.0f);
      std::vector<float> ye(ye_fill.begin(), ye_fill.begin() + rows * C);  // stands in for the experts
      moe_gather(xe.data(), x.data(), row_token.data(), rows, C, C);
      moe_combine(out.data(), ye.data(), slot.data(), gate.data(), d.N, d.K, C, 1.0f);
      // Combined and added to a base in one pass: the bits of a combine into a buffer, then an add.
      std::vector<float> comb(d.N * C), added(d.N * C), fused(d.N * C);
      moe_combine(comb.data(), ye.data(), slot.data(), gate.data(), d.N, d.K, C, 0.0f);
      for (size_t i = 0; i < comb.size(); ++i) added[i] = out0[i] + comb[i];
      moe_combine_add(fused.data(), out0.data(), ye.data(), slot.data(), gate.data(), d.N, d.K, C);
      EXPECT_EQ(0, std::memcmp(added.data(), fused.data(), added.size() * sizeof(float)));
      moe_combine_backward(dye.data(), dgate.data(), dout.data(), ye.data(), slot.data(), gate.data(), row_token.data(),
                           rows, d.N, d.K, C);
      moe_gather_backward(dx.data(), dye.data(), slot.data(), d.N, d.K, C);
      row_token.resize(rows);
      Bytes b;
      append(b, slot), append(b, begin), append(b, kept), append(b, dropped), append(b, row_token);
      append(b, xe), append(b, out), append(b, fused), append(b, dye), append(b, dgate), append(b, dx);
      return b;
    });
  }
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

// The grouped expert kernel runs SwiGLU inside its own tasks through the
// on-thread forms; they must give the row-parallel kernels' bits.
TEST_F(Threads, SwigluOnThreadGivesTheParallelKernelsBits) {
  const int64_t M = 300, F = 344;  // F leaves a masked tail in every row
  const auto h = randn(M * 2 * F, 1.0f, 71), dz = randn(M * F, 1.0f, 72);
  omp_set_num_threads(2);
  std::vector<float> z(M * F), dh(M * 2 * F), z1(M * F), dh1(M * 2 * F);
  swiglu_forward(z.data(), h.data(), M, F);
  swiglu_backward(dh.data(), dz.data(), h.data(), M, F);
  swiglu_forward_on_thread(z1.data(), OperandForm::kFp32, h.data(), M, F);
  swiglu_backward_on_thread(dh1.data(), OperandForm::kFp32, dz.data(), h.data(), M, F);
  EXPECT_EQ(0, std::memcmp(z.data(), z1.data(), z.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(dh.data(), dh1.data(), dh.size() * sizeof(float)));
}

// GEMM through oneDNN on model shapes, in all three linear forms.
struct GemmJob {
  std::string name;
  int64_t out_size;
  std::function<void(float*)> run;  // writes the result into out (out_size floats)
};

struct GemmInputs {
  std::vector<float> x, W, dy;
};

std::vector<GemmJob> gemm_jobs(std::vector<GemmInputs>& keep) {
  struct Shape {
    int64_t M, N, K;
  };
  // The last is the router (E = 64): its weight gradient is a long
  // reduction (4096) into a small output, where a library may split K.
  const Shape shapes[] = {{4096, 768, 512}, {4096, 512, 768}, {1024, 2048, 768}, {4096, 64, 768}};
  keep.resize(4);
  std::vector<GemmJob> jobs;
  for (MatmulPrecision p : {MatmulPrecision::kFp32, MatmulPrecision::kBf16})
    for (int i = 0; i < 4; ++i) {
      const Shape s = shapes[i];
      GemmInputs& in = keep[i];
      if (in.x.empty()) in = {randn(s.M * s.K, 1.0f, 71), randn(s.N * s.K, 0.05f, 72), randn(s.M * s.N, 1.0f, 73)};
      const std::string tag = cat(" ", s.M, "x", s.N, "x", s.K, p == MatmulPrecision::kFp32 ? " fp32" : " bf16");
      jobs.push_back({"linear_forward" + tag, s.M * s.N,
                      [&in, s, p](float* o) { linear_forward(o, in.x.data(), in.W.data(), s.M, s.N, s.K, p); }});
      jobs.push_back({"linear_backward_input" + tag, s.M * s.K, [&in, s, p](float* o) {
                        linear_backward_input(o, in.dy.data(), in.W.data(), s.M, s.N, s.K, 0.0f, p);
                      }});
      jobs.push_back({"linear_backward_weight" + tag, s.N * s.K, [&in, s, p](float* o) {
                        std::fill(o, o + s.N * s.K, 0.0f);
                        linear_backward_weight(o, in.dy.data(), in.x.data(), s.M, s.N, s.K, p);
                      }});
    }
  return jobs;
}

struct Diff {
  int64_t n_diff = 0;
  double max_rel = 0;  // max |a - b| / max |a|
};

Diff compare(const float* a, const float* b, int64_t n) {
  double max_abs = 0, max_diff = 0;
  Diff d;
  for (int64_t i = 0; i < n; ++i) {
    max_abs = std::max(max_abs, double(std::abs(a[i])));
    max_diff = std::max(max_diff, std::abs(double(a[i]) - double(b[i])));
    d.n_diff += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  }
  d.max_rel = max_abs > 0 ? max_diff / max_abs : max_diff;
  return d;
}

void report(const char* how, const std::string& name, const Diff& d) {
  std::printf("[ gemm     ] %-10s %-46s %s (%lld elements differ, max |diff| / max |y| = %.3g)\n", how,
              name.c_str(), d.n_diff ? "DIFFERENT" : "bitwise identical", (long long)d.n_diff, d.max_rel);
}

// Helper mode for GemmFreshProcesses: with MT_GEMM_DUMP set, runs every GEMM
// job under this process's OMP_NUM_THREADS and writes the results there.
TEST(ThreadsGemmHelper, Dump) {
  const char* path = std::getenv("MT_GEMM_DUMP");
  if (!path) GTEST_SKIP() << "helper process for Threads.GemmFreshProcesses";
  std::vector<GemmInputs> keep;
  FILE* f = std::fopen(path, "wb");
  ASSERT_NE(f, nullptr);
  const int32_t threads = omp_get_max_threads();
  ASSERT_EQ(std::fwrite(&threads, sizeof(threads), 1, f), 1u);
  for (const GemmJob& j : gemm_jobs(keep)) {
    std::vector<float> out(j.out_size);
    j.run(out.data());
    ASSERT_EQ(std::fwrite(out.data(), sizeof(float), out.size(), f), out.size());
  }
  ASSERT_EQ(std::fclose(f), 0);
}

// A fresh process per thread count: each creates its oneDNN primitives under
// its own thread count, as separate training runs would.
TEST_F(Threads, GemmFreshProcesses) {
  char exe[4096];
  const ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  ASSERT_GT(len, 0);
  exe[len] = 0;
  const std::string base = cat(::testing::TempDir(), "mt_gemm_threads_", getpid(), "_");
  for (int t : {1, 2}) {
    const std::string cmd = cat("OMP_NUM_THREADS=", t, " MT_GEMM_DUMP='", base, t, ".bin' '", exe,
                                "' --gtest_filter=ThreadsGemmHelper.Dump > /dev/null 2>&1");
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  FILE* f1 = std::fopen((base + "1.bin").c_str(), "rb");
  FILE* f2 = std::fopen((base + "2.bin").c_str(), "rb");
  ASSERT_TRUE(f1 && f2);
  int32_t t1 = 0, t2 = 0;
  ASSERT_EQ(std::fread(&t1, sizeof(t1), 1, f1), 1u);
  ASSERT_EQ(std::fread(&t2, sizeof(t2), 1, f2), 1u);
  ASSERT_EQ(t1, 1);
  ASSERT_EQ(t2, 2);
  std::vector<GemmInputs> keep;  // shapes only; inputs are regenerated by the helper
  int differing = 0, total = 0;
  for (const GemmJob& j : gemm_jobs(keep)) {
    std::vector<float> a(j.out_size), b(j.out_size);
    ASSERT_EQ(std::fread(a.data(), sizeof(float), a.size(), f1), a.size());
    ASSERT_EQ(std::fread(b.data(), sizeof(float), b.size(), f2), b.size());
    const Diff d = compare(a.data(), b.data(), j.out_size);
    report("fresh 1|2", j.name, d);
    differing += d.n_diff > 0;
    ++total;
    EXPECT_LE(d.max_rel, 1e-5) << j.name;
  }
  std::fclose(f1);
  std::fclose(f2);
  std::remove((base + "1.bin").c_str());
  std::remove((base + "2.bin").c_str());
  std::printf("[ gemm     ] fresh processes: %d of %d GEMMs differ between 1 and 2 threads\n", differing, total);
  RecordProperty("gemm_fresh_process_differing", differing);
}

// One process whose thread count changes after the primitives were cached
// (created under 2 threads, then run under 1 and under 2 again).
TEST_F(Threads, GemmCachedPrimitiveAcrossThreadCounts) {
  std::vector<GemmInputs> keep;
  int differing = 0, total = 0;
  for (const GemmJob& j : gemm_jobs(keep)) {
    std::vector<float> two(j.out_size), one(j.out_size), two_again(j.out_size);
    omp_set_num_threads(2);
    j.run(two.data());
    omp_set_num_threads(1);
    j.run(one.data());
    omp_set_num_threads(2);
    j.run(two_again.data());
    EXPECT_EQ(0, std::memcmp(two.data(), two_again.data(), sizeof(float) * j.out_size))
        << j.name << ": not run-to-run deterministic";
    const Diff d = compare(two.data(), one.data(), j.out_size);
    report("cached", j.name, d);
    differing += d.n_diff > 0;
    ++total;
    EXPECT_LE(d.max_rel, 1e-5) << j.name;
  }
  std::printf("[ gemm     ] cached primitives: %d of %d GEMMs differ between 1 and 2 threads\n", differing, total);
}

}  // namespace
}  // namespace mt
