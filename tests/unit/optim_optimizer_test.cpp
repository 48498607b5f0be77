// optim_optimizer_test.cpp — Muon, Hyperball and the per-tensor optimizer
// (optim/optimizer.h, kernels/cpu/muon.h) against hand-computed cases:
//  - Newton-Schulz on diagonal and rotated matrices follows the scalar
//    polynomial on each singular value; tall matrices are the transpose of
//    wide ones; Jordan's quintic lands every singular value of a random
//    matrix in [0.5, 1.5] after 5 steps, and the classic cubic (1.5, -0.5, 0)
//    reaches exact orthogonality (O O^T = I within 1e-4);
//  - one Muon step equals (1 - lr wd) W - lr 0.2 sqrt(max(A, B)) NS(u), with
//    AdamW on the embedding, norms and head;
//  - one Hyperball step (over AdamW, over Muon) equals
//    R Normalize(W - lr R Normalize(u)) computed by hand, the step before
//    the projection has norm lr R, and over 100 steps every wrapped matrix
//    keeps its initial norm within 1e-5;
//  - with name = "adamw" and no Hyperball the optimizer is AdamW bit for bit;
//  - two ranks (threads, shards cutting through matrices) match one process;
//  - the bf16 shadow written by the update's pass is bf16(params) exactly;
//  - aux_lr steps the tensors it names; [optim] keys are strict.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>

#include "core/bf16.h"
#include "core/reduce.h"
#include "kernels/cpu/adamw.h"
#include "kernels/cpu/muon.h"
#include "optim/adamw_optimizer.h"
#include "model/weights.h"
#include "optim/optimizer.h"
#include "plan/cluster.h"
#include "plan/layout.h"
#include "plan/memory.h"
#include "plan/model_stats.h"
#include "support/random.h"
#include "support/thread_comm.h"
#include "train/run_config.h"
#include "support/plan_fixtures.h"

namespace mt {
namespace {

using testing::randn;

// ---------------------------------------------------------------- references

// Newton-Schulz in double, straight from the definition (wide orientation).
std::vector<double> ns_reference(const std::vector<float>& g, int64_t rows, int64_t cols, const NewtonSchulzParams& p) {
  const bool tall = rows > cols;
  const int64_t m = tall ? cols : rows, n = tall ? rows : cols;
  std::vector<double> X(size_t(m * n));
  double ss = 0;
  for (float x : g) ss += double(x) * double(x);
  const double inv = 1.0 / (std::sqrt(ss) + double(p.eps));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) (tall ? X[size_t(j * n + i)] : X[size_t(i * n + j)]) = g[size_t(i * cols + j)] * inv;
  for (int64_t s = 0; s < p.steps; ++s) {
    std::vector<double> A(size_t(m * m), 0.0), B(size_t(m * m), 0.0), Y(size_t(m * n), 0.0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j)
        for (int64_t k = 0; k < n; ++k) A[size_t(i * m + j)] += X[size_t(i * n + k)] * X[size_t(j * n + k)];
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double aa = 0;
        for (int64_t k = 0; k < m; ++k) aa += A[size_t(i * m + k)] * A[size_t(k * m + j)];
        B[size_t(i * m + j)] = double(p.b) * A[size_t(i * m + j)] + double(p.c) * aa;
      }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double bx = 0;
        for (int64_t k = 0; k < m; ++k) bx += B[size_t(i * m + k)] * X[size_t(k * n + j)];
        Y[size_t(i * n + j)] = double(p.a) * X[size_t(i * n + j)] + bx;
      }
    X = Y;
  }
  std::vector<double> out(size_t(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) out[size_t(i * cols + j)] = tall ? X[size_t(j * n + i)] : X[size_t(i * n + j)];
  return out;
}

// The scalar polynomial NS applies to each singular value.
double ns_scalar(double x, const NewtonSchulzParams& p) {
  for (int64_t s = 0; s < p.steps; ++s) x = double(p.a) * x + double(p.b) * x * x * x + double(p.c) * x * x * x * x * x;
  return x;
}

// Eigenvalues of a symmetric n x n matrix (cyclic Jacobi, double).
std::vector<double> sym_eigenvalues(std::vector<double> a, int64_t n) {
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i + 1; j < n; ++j) off += a[size_t(i * n + j)] * a[size_t(i * n + j)];
    if (off < 1e-24) break;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        const double apq = a[size_t(p * n + q)];
        if (std::fabs(apq) < 1e-300) continue;
        const double theta = (a[size_t(q * n + q)] - a[size_t(p * n + p)]) / (2 * apq);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int64_t k = 0; k < n; ++k) {  // columns p, q
          const double akp = a[size_t(k * n + p)], akq = a[size_t(k * n + q)];
          a[size_t(k * n + p)] = c * akp - s * akq;
          a[size_t(k * n + q)] = s * akp + c * akq;
        }
        for (int64_t k = 0; k < n; ++k) {  // rows p, q
          const double apk = a[size_t(p * n + k)], aqk = a[size_t(q * n + k)];
          a[size_t(p * n + k)] = c * apk - s * aqk;
          a[size_t(q * n + k)] = s * apk + c * aqk;
        }
      }
  }
  std::vector<double> ev;
  for (int64_t i = 0; i < n; ++i) ev.push_back(a[size_t(i * n + i)]);
  return ev;
}

// Singular values of a rows x cols matrix: sqrt of the eigenvalues of the smaller Gram matrix.
std::vector<double> singular_values(const std::vector<float>& o, int64_t rows, int64_t cols) {
  const int64_t m = std::min(rows, cols);
  std::vector<double> g(size_t(m * m), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j)
      for (int64_t k = 0; k < std::max(rows, cols); ++k) {
        const double x = rows <= cols ? o[size_t(i * cols + k)] : o[size_t(k * cols + i)];
        const double y = rows <= cols ? o[size_t(j * cols + k)] : o[size_t(k * cols + j)];
        g[size_t(i * m + j)] += x * y;
      }
  std::vector<double> ev = sym_eigenvalues(g, m);
  for (double& e : ev) e = std::sqrt(std::max(0.0, e));
  return ev;
}

std::vector<float> run_ns(const std::vector<float>& g, int64_t rows, int64_t cols, const NewtonSchulzParams& p) {
  std::vector<float> out(g.size()), scratch(size_t(newton_schulz_scratch(rows, cols)));
  newton_schulz(out.data(), g.data(), rows, cols, p, scratch.data());
  return out;
}

// ---------------------------------------------------------------- Newton-Schulz

TEST(NewtonSchulz, DiagonalAndRotatedMatricesFollowTheScalarPolynomial) {
  const NewtonSchulzParams p;  // Jordan's (3.4445, -4.7750, 2.0315), 5 steps
  // diag(3, 4): ||G||_F = 5, singular values 0.6 and 0.8 after normalising.
  const auto d = run_ns({3, 0, 0, 4}, 2, 2, p);
  EXPECT_NEAR(d[0], ns_scalar(0.6, p), 1e-5);
  EXPECT_NEAR(d[3], ns_scalar(0.8, p), 1e-5);
  EXPECT_EQ(d[1], 0.0f);
  EXPECT_EQ(d[2], 0.0f);
  // By hand, one step of x -> a x + b x^3 + c x^5 from 0.6: 2.0667 - 1.0314 + 0.1580 = 1.1933.
  NewtonSchulzParams one = p;
  one.steps = 1;
  EXPECT_NEAR(run_ns({3, 0, 0, 4}, 2, 2, one)[0], 1.19330, 1e-4);

  // U diag(1, 2) V^T with rotations U, V: the output is U diag(f(1/sqrt5), f(2/sqrt5)) V^T.
  const double tu = 0.3, tv = -1.1, s1 = 1.0 / std::sqrt(5.0), s2 = 2.0 / std::sqrt(5.0);
  const double U[2][2] = {{std::cos(tu), -std::sin(tu)}, {std::sin(tu), std::cos(tu)}};
  const double V[2][2] = {{std::cos(tv), -std::sin(tv)}, {std::sin(tv), std::cos(tv)}};
  auto compose = [&](double a, double b) {
    std::vector<double> out(4);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) out[size_t(i * 2 + j)] = U[i][0] * a * V[j][0] + U[i][1] * b * V[j][1];
    return out;
  };
  const std::vector<double> g = compose(1.0, 2.0), want = compose(ns_scalar(s1, p), ns_scalar(s2, p));
  const auto got = run_ns({float(g[0]), float(g[1]), float(g[2]), float(g[3])}, 2, 2, p);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[size_t(i)], want[size_t(i)], 1e-5) << i;

  // Tall (3 x 2): computed on the transpose, returned in the input's shape.
  const auto t = run_ns({3, 0, 0, 4, 0, 0}, 3, 2, p);
  EXPECT_NEAR(t[0], ns_scalar(0.6, p), 1e-5);
  EXPECT_NEAR(t[3], ns_scalar(0.8, p), 1e-5);
  EXPECT_EQ(t[4], 0.0f);
  EXPECT_EQ(t[5], 0.0f);
}

TEST(NewtonSchulz, MatchesTheDoubleReferenceAndTransposes) {
  const NewtonSchulzParams p;
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{24, 40}, {40, 24}, {33, 33}, {64, 8}}) {
    SCOPED_TRACE(::testing::Message() << rows << " x " << cols);
    const auto g = randn(rows * cols, 0.02f, 7, uint64_t(rows * 100 + cols));
    const auto got = run_ns(g, rows, cols, p);
    const auto want = ns_reference(g, rows, cols, p);
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
    EXPECT_LT(worst, 2e-5);
    // NS(G^T) = NS(G)^T.
    std::vector<float> gt(g.size());
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) gt[size_t(j * rows + i)] = g[size_t(i * cols + j)];
    const auto back = run_ns(gt, cols, rows, p);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) ASSERT_NEAR(back[size_t(j * rows + i)], got[size_t(i * cols + j)], 2e-6);
  }
}

TEST(NewtonSchulz, OutputIsOrthogonal) {
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{24, 40}, {40, 24}}) {
    SCOPED_TRACE(::testing::Message() << rows << " x " << cols);
    const auto g = randn(rows * cols, 1.0f, 11, uint64_t(rows));
    // Jordan's quintic, 5 steps: singular values in [0.5, 1.5] ("US'V^T with
    // S' ~ Uniform(0.5, 1.5)"), not all 1.
    const auto sv = singular_values(run_ns(g, rows, cols, NewtonSchulzParams{}), rows, cols);
    for (double s : sv) {
      EXPECT_GT(s, 0.5);
      EXPECT_LT(s, 1.5);
    }
    // The classic cubic (1.5, -0.5, 0) converges to the orthogonal polar factor.
    NewtonSchulzParams cubic;
    cubic.a = 1.5f;
    cubic.b = -0.5f;
    cubic.c = 0.0f;
    cubic.steps = 40;
    const auto sv2 = singular_values(run_ns(g, rows, cols, cubic), rows, cols);
    for (double s : sv2) EXPECT_NEAR(s, 1.0, 1e-4);
  }
}

// ---------------------------------------------------------------- the optimizer

// embed (6, 4), a norm, attention wq (4, 4), a dense MLP w1 (8, 4) / w2 (4, 8), final norm, head (6, 4).
ParamLayout small_layout() {
  ParamLayout L;
  L.add("embed", {6, 4}, ParamKind::kEmbedding);
  L.add("layers.0.attn_norm", {4}, ParamKind::kNorm, 0);
  L.add("layers.0.attn.wq", {4, 4}, ParamKind::kMatrix, 0);
  L.add("layers.0.mlp.w1", {8, 4}, ParamKind::kMatrix, 0);
  L.add("layers.0.mlp.w2", {4, 8}, ParamKind::kMatrix, 0);
  L.add("final_norm", {4}, ParamKind::kNorm);
  L.add("head", {6, 4}, ParamKind::kMatrix);
  return L;
}

std::vector<float> init(const ParamLayout& L) {
  std::vector<float> p = randn(L.total(), 0.5f, 3);
  for (const ParamEntry& e : L.entries())
    if (e.kind == ParamKind::kNorm) std::fill(p.begin() + e.offset, p.begin() + e.offset + e.numel, 1.0f);
  return p;
}

double frob(const float* x, int64_t n) { return std::sqrt(sum_squares(x, n)); }

// The trainer hands the update its gradient storage to zero: the same
// step, bitwise, and zero gradients after it, for every base optimizer.
TEST(Optimizer, SpentGradientsAreZeroedAndTheStepIsUnchanged) {
  const ParamLayout L = small_layout();
  for (const auto& [name, hyperball] : {std::pair{OptimizerName::kAdamW, false}, std::pair{OptimizerName::kMuon, false},
                                       std::pair{OptimizerName::kAdamW, true}, std::pair{OptimizerName::kMuon, true}}) {
    SCOPED_TRACE(std::string(name == OptimizerName::kMuon ? "muon" : "adamw") + (hyperball ? " + hyperball" : ""));
    OptimizerConfig c;
    c.name = name;
    c.hyperball = hyperball;
    LocalComm comm;
    Optimizer kept(L, AdamWConfig{}, c, 1e-2, comm), spent(L, AdamWConfig{}, c, 1e-2, comm);
    std::vector<float> p1 = init(L), p2 = p1;
    kept.init_radii(p1.data());
    spent.init_radii(p2.data());
    for (int64_t step = 1; step <= 3; ++step) {
      const auto g = randn(L.total(), 1.0f, 7, uint64_t(step));
      std::vector<float> g2 = g;
      kept.update(p1.data(), g.data(), 1e-2, step, 1.0);
      spent.update(p2.data(), g2.data(), 1e-2, step, 1.0, nullptr, g2.data());
      EXPECT_TRUE(std::all_of(g2.begin(), g2.end(), [](float x) { return x == 0.0f; }));
    }
    EXPECT_EQ(0, std::memcmp(p1.data(), p2.data(), p1.size() * sizeof(float)));
  }
}

TEST(Optimizer, AdamWModeIsAdamWBitForBit) {
  const ParamLayout L = small_layout();
  AdamWConfig a;
  a.decay_embeddings = true;
  a.grad_clip = 0.5;  // engaged: the gradients below have norm ~ 5
  LocalComm comm;
  AdamW ref(L, a);
  Optimizer opt(L, a, OptimizerConfig{}, 1e-2, comm);
  std::vector<float> p1 = init(L), p2 = p1;
  for (int64_t step = 1; step <= 5; ++step) {
    const auto g = randn(L.total(), 1.0f, 5, uint64_t(step));
    const double n1 = ref.step(p1.data(), g.data(), 1e-2, step), n2 = opt.step(p2.data(), g.data(), 1e-2, step);
    EXPECT_EQ(n1, n2);
  }
  EXPECT_EQ(0, std::memcmp(p1.data(), p2.data(), p1.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(ref.m().data(), opt.m_local().data(), p1.size() * sizeof(float)));
  const std::vector<float> v = opt.v_local();
  EXPECT_EQ(0, std::memcmp(ref.v().data(), v.data(), p1.size() * sizeof(float)));
}

TEST(Optimizer, OneMuonStepByHand) {
  const ParamLayout L = small_layout();
  AdamWConfig a;
  a.grad_clip = 0;
  a.weight_decay = 0.1;
  OptimizerConfig c;
  c.name = OptimizerName::kMuon;
  LocalComm comm;
  Optimizer opt(L, a, c, 0.02, comm);
  const std::vector<float> p0 = init(L);
  std::vector<float> p = p0;
  const auto g = randn(L.total(), 1.0f, 9);
  const double lr = 0.02;
  opt.step(p.data(), g.data(), lr, 1);
  const NewtonSchulzParams ns;
  for (const ParamEntry& e : L.entries()) {
    SCOPED_TRACE(e.name);
    const bool muon = e.name.find(".attn.") != std::string::npos || e.name.find(".mlp.") != std::string::npos;
    EXPECT_EQ(opt.rule(int64_t(&e - L.entries().data())).base == BaseOptimizer::kMuon, muon);
    if (muon) {
      // Step 1: buf = (1 - beta) g, u = (1 - beta) g + beta buf: a multiple of g, which NS ignores.
      const std::vector<float> ge(g.begin() + e.offset, g.begin() + e.offset + e.numel);
      const auto o = ns_reference(ge, e.shape[0], e.shape[1], ns);
      const double mult = 0.2 * std::sqrt(double(std::max(e.shape[0], e.shape[1])));  // Moonlight
      for (int64_t i = 0; i < e.numel; ++i) {
        const double want = double(p0[size_t(e.offset + i)]) * (1 - lr * 0.1) - lr * mult * o[size_t(i)];
        ASSERT_NEAR(p[size_t(e.offset + i)], want, 2e-6) << i;
      }
    } else {
      // AdamW, as its kernel does it (decay on matrices only: the head here).
      std::vector<float> q(p0.begin() + e.offset, p0.begin() + e.offset + e.numel), m(size_t(e.numel), 0.0f),
          v(size_t(e.numel), 0.0f);
      const float wd = e.kind == ParamKind::kMatrix ? 0.1f : 0.0f;
      adamw_update(q.data(), m.data(), v.data(), g.data() + e.offset, e.numel,
                   AdamWParams{float(lr), 0.9f, 0.95f, 1e-8f, wd, 1.0f, 1});
      for (int64_t i = 0; i < e.numel; ++i) ASSERT_EQ(p[size_t(e.offset + i)], q[size_t(i)]) << i;
    }
  }
}

// Muon under the Hyperball wrapper on one 2x2 matrix (no clipping), peak
// learning rate 0.05: the set-up of the two Muon cases below.
struct HyperballMuon2x2 {
  static ParamLayout layout() {
    ParamLayout L;
    L.add("layers.0.attn.wq", {2, 2}, ParamKind::kMatrix, 0);
    return L;
  }
  static AdamWConfig no_clip() {
    AdamWConfig a;
    a.grad_clip = 0;
    return a;
  }
  static OptimizerConfig muon() {
    OptimizerConfig c;
    c.name = OptimizerName::kMuon;
    c.hyperball = true;
    return c;
  }
  ParamLayout L = layout();
  LocalComm comm;
  Optimizer opt{L, no_clip(), muon(), 0.05, comm};
};

TEST(Optimizer, OneHyperballStepByHand) {
  // Over AdamW: head = (3, 4), R = 5; step 1 of Adam gives u = g / (|g| + eps).
  {
    ParamLayout L;
    L.add("embed", {2, 2}, ParamKind::kEmbedding);
    L.add("head", {1, 2}, ParamKind::kMatrix);
    AdamWConfig a;
    a.grad_clip = 0;
    OptimizerConfig c;
    c.hyperball = true;
    LocalComm comm;
    Optimizer opt(L, a, c, 0.1, comm);
    std::vector<float> p = {0.1f, 0.2f, 0.3f, 0.4f, 3.0f, 4.0f};
    opt.init_radii(p.data());
    ASSERT_EQ(opt.radii().size(), 1u);
    EXPECT_EQ(opt.radii()[0], 5.0f);
    const std::vector<float> g = {0, 0, 0, 0, 1.0f, 2.0f};
    const double eta = 0.1;
    opt.step(p.data(), g.data(), eta, 1);
    const double u0 = 1.0 / (1.0 + 1e-8), u1 = 2.0 / (2.0 + 1e-8), un = std::hypot(u0, u1);
    const double w0 = 3.0 - eta * 5.0 * u0 / un, w1 = 4.0 - eta * 5.0 * u1 / un, wn = std::hypot(w0, w1);
    EXPECT_NEAR(p[4], 5.0 * w0 / wn, 2e-6);  // 5 x 2.64645 / 4.50558 = 2.93685
    EXPECT_NEAR(p[5], 5.0 * w1 / wn, 2e-6);
    EXPECT_NEAR(p[4], 2.93685, 1e-5);
    EXPECT_NEAR(std::hypot(p[4], p[5]), 5.0, 1e-5);
  }
  // Over Muon: W = diag(3, 4), g = diag(2, 1): the direction is
  // D = NS(g) / ||NS(g)||_F = diag(f(2/sqrt5), f(1/sqrt5)) / norm.
  {
    HyperballMuon2x2 m;
    Optimizer& opt = m.opt;
    std::vector<float> p = {3, 0, 0, 4};
    opt.init_radii(p.data());
    const NewtonSchulzParams ns;
    const double f1 = ns_scalar(2 / std::sqrt(5.0), ns), f2 = ns_scalar(1 / std::sqrt(5.0), ns), fn = std::hypot(f1, f2);
    const double eta = 0.05;
    opt.step(p.data(), std::vector<float>{2, 0, 0, 1}.data(), eta, 1);
    const double w0 = 3 - eta * 5 * f1 / fn, w3 = 4 - eta * 5 * f2 / fn, wn = std::hypot(w0, w3);
    EXPECT_NEAR(p[0], 5 * w0 / wn, 2e-6);
    EXPECT_NEAR(p[3], 5 * w3 / wn, 2e-6);
    EXPECT_EQ(p[1], 0.0f);
    EXPECT_EQ(p[2], 0.0f);
  }
  // The update's norm: g = [[0, 1], [1, 0]] is orthogonal to W = diag(3, 4)
  // (and NS keeps its direction), so W' = W - lr R D with <W, D> = 0 and
  // ||W'|| = R sqrt(1 + lr^2); undoing the projection recovers the update,
  // whose Frobenius norm must be lr R = 0.05 x 5 = 0.25.
  {
    HyperballMuon2x2 m;
    Optimizer& opt = m.opt;
    const std::vector<float> w = {3, 0, 0, 4};
    std::vector<float> p = w;
    opt.init_radii(p.data());
    opt.step(p.data(), std::vector<float>{0, 1, 1, 0}.data(), 0.05, 1);
    double upd = 0;
    for (int i = 0; i < 4; ++i) upd += std::pow(double(p[size_t(i)]) * std::sqrt(1 + 0.05 * 0.05) - w[size_t(i)], 2);
    EXPECT_NEAR(std::sqrt(upd), 0.05 * 5.0, 1e-6);
    EXPECT_NEAR(p[1], p[2], 1e-7);  // along D = [[0, 1], [1, 0]] / sqrt(2)
    EXPECT_NEAR(std::hypot(std::hypot(p[0], p[1]), std::hypot(p[2], p[3])), 5.0, 1e-5);
  }
}

TEST(Optimizer, HyperballHoldsEveryNormOver100Steps) {
  for (OptimizerName name : {OptimizerName::kAdamW, OptimizerName::kMuon}) {
    SCOPED_TRACE(name == OptimizerName::kMuon ? "muon" : "adamw");
    const ParamLayout L = small_layout();
    AdamWConfig a;
    OptimizerConfig c;
    c.name = name;
    c.hyperball = true;
    c.aux_lr = 1e-3;
    LocalComm comm;
    Optimizer opt(L, a, c, 0.05, comm);
    std::vector<float> p = init(L);
    const std::vector<float> p0 = p;
    opt.init_radii(p.data());
    for (int64_t step = 1; step <= 100; ++step) {
      const auto g = randn(L.total(), 1.0f, 21, uint64_t(step));
      opt.step(p.data(), g.data(), 0.05 * (step <= 80 ? 1.0 : 0.5), step);
      for (size_t i = 0; i < opt.wrapped_entries().size(); ++i) {
        const ParamEntry& e = L.entries()[size_t(opt.wrapped_entries()[i])];
        ASSERT_NEAR(frob(p.data() + e.offset, e.numel) / opt.radii()[i], 1.0, 1e-5) << e.name << " step " << step;
      }
    }
    // Wrapped: attention, MLP and head; they moved. Not wrapped: embedding and norms.
    ASSERT_EQ(opt.wrapped_entries().size(), 4u);
    for (int64_t w : opt.wrapped_entries()) {
      const ParamEntry& e = L.entries()[size_t(w)];
      double d = 0;
      for (int64_t i = 0; i < e.numel; ++i) d += std::pow(double(p[size_t(e.offset + i)]) - p0[size_t(e.offset + i)], 2);
      EXPECT_GT(std::sqrt(d), 0.2 * frob(p0.data() + e.offset, e.numel)) << e.name;
    }
  }
}

// ---------------------------------------------------------------- two ranks

// A base optimizer, with or without the Hyperball wrapper.
struct OptimizerCase {
  const char* name;
  OptimizerName base;
  bool hyperball;
  OptimizerConfig config() const {
    OptimizerConfig c;
    c.name = base;
    c.hyperball = hyperball;
    return c;
  }
};
const OptimizerCase kAdamW{"adamw", OptimizerName::kAdamW, false}, kMuon{"muon", OptimizerName::kMuon, false},
    kMuonHyperball{"muon-hyperball", OptimizerName::kMuon, true},
    kAdamWHyperball{"adamw-hyperball", OptimizerName::kAdamW, true};

TEST(Optimizer, TwoRanksMatchOneProcess) {
  const ParamLayout L = small_layout();
  const int64_t T = L.total();
  // Cuts through the middle of wq, w1 and the head: rank 0 holds [0, 31) and [70, 120).
  const std::vector<std::vector<Optimizer::Range>> ranks = {{{0, 31, 0}, {70, 120, 31}},
                                                             {{31, 70, 0}, {120, T, 39}}};
  for (const OptimizerCase& k : {kMuon, kMuonHyperball, kAdamWHyperball}) {
    SCOPED_TRACE(k.name);
    AdamWConfig a;
    const OptimizerConfig c = k.config();
    LocalComm local;
    Optimizer one(L, a, c, 0.02, local);
    std::vector<float> ref = init(L);
    const std::vector<float> start = ref;
    one.init_radii(ref.data());
    const int64_t steps = 5;
    for (int64_t s = 1; s <= steps; ++s) one.step(ref.data(), randn(T, 1.0f, 31, uint64_t(s)).data(), 0.02, s);

    testing::ThreadComm::World shared(2);
    std::vector<std::vector<float>> shard(2);
    auto run = [&](int r) {
      testing::ThreadComm comm(shared, r);
      Optimizer opt(L, a, c, 0.02, ranks, comm);
      std::vector<float>& p = shard[size_t(r)];
      p.resize(size_t(opt.local_size()));
      for (const Optimizer::Range& rg : ranks[size_t(r)])
        std::copy(start.begin() + rg.lo, start.begin() + rg.hi, p.begin() + rg.local);
      opt.init_radii(start.data());
      for (int64_t s = 1; s <= steps; ++s) {
        const auto g = randn(T, 1.0f, 31, uint64_t(s));
        std::vector<float> gl(p.size());
        for (const Optimizer::Range& rg : ranks[size_t(r)])
          std::copy(g.begin() + rg.lo, g.begin() + rg.hi, gl.begin() + rg.local);
        double ss = opt.local_sum_squares(gl.data());
        comm.allreduce_sum(&ss, 1, "norm");
        opt.update(p.data(), gl.data(), 0.02, s, std::sqrt(ss));
      }
    };
    std::thread t0(run, 0), t1(run, 1);
    t0.join();
    t1.join();
    double worst = 0;
    for (int r = 0; r < 2; ++r)
      for (const Optimizer::Range& rg : ranks[size_t(r)])
        for (int64_t i = rg.lo; i < rg.hi; ++i)
          worst = std::max(worst, std::fabs(double(shard[size_t(r)][size_t(rg.local + i - rg.lo)]) - ref[size_t(i)]));
    EXPECT_LT(worst, 1e-6);
    double moved = 0;
    for (int64_t i = 0; i < T; ++i) moved = std::max(moved, std::fabs(double(ref[size_t(i)]) - start[size_t(i)]));
    EXPECT_GT(moved, 1e-3);  // the comparison means something
  }
}

// The update's pass writes the bf16 shadow of every parameter it changes
// (the shadow starts as NaN patterns, so a missed element shows), and the
// parameters are those of an update without a shadow, bit for bit.
TEST(Optimizer, UpdateRefreshesTheBf16ShadowInItsPass) {
  const ParamLayout L = small_layout();
  const int64_t T = L.total();
  for (const OptimizerCase& k : {kAdamW, kMuon, kMuonHyperball, kAdamWHyperball}) {
    SCOPED_TRACE(k.name);
    AdamWConfig a;
    const OptimizerConfig c = k.config();
    LocalComm local;
    Optimizer plain(L, a, c, 0.02, local), fused(L, a, c, 0.02, local);
    std::vector<float> p1 = init(L), p2 = p1;
    plain.init_radii(p1.data());
    fused.init_radii(p2.data());
    std::vector<bf16> shadow(size_t(T), bf16{0xFFFF});
    for (int64_t s = 1; s <= 3; ++s) {
      const auto g = randn(T, 1.0f, 41, uint64_t(s));
      const double norm = std::sqrt(plain.local_sum_squares(g.data()));
      plain.update(p1.data(), g.data(), 0.02, s, norm);
      fused.update(p2.data(), g.data(), 0.02, s, norm, shadow.data());
      ASSERT_EQ(0, std::memcmp(p1.data(), p2.data(), size_t(T) * sizeof(float))) << "step " << s;
      for (int64_t i = 0; i < T; ++i)
        ASSERT_EQ(shadow[size_t(i)].bits, f32_to_bf16(p2[size_t(i)]).bits) << "step " << s << " element " << i;
    }
  }
}

// Span and block conversions round to nearest even, ties and NaN included.
TEST(Bf16Convert, SpanMatchesTheScalarRounding) {
  std::vector<float> x = randn(1000, 3.0f, 5, 1);
  const uint32_t special[] = {0x3f808000u, 0x3f818000u, 0x7f800000u, 0xff800000u, 0x7fc00001u, 0x7f800001u,
                              0x00000001u, 0x80000000u, 0x7f7fffffu};
  for (size_t i = 0; i < std::size(special); ++i) std::memcpy(&x[i * 7], &special[i], 4);
  std::vector<bf16> span(x.size()), block(x.size());
  convert_f32_to_bf16_span(span.data(), x.data(), int64_t(x.size()));
  convert_f32_to_bf16(block.data(), x.data(), 10, 100, 100);
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(span[i].bits, f32_to_bf16(x[i]).bits) << i;
    ASSERT_EQ(block[i].bits, span[i].bits) << i;
  }
}

// ---------------------------------------------------------------- the planner

// The planner's CPU figure is what the optimizer allocates, for Muon with and
// without a latent MoE and shared experts; on GPUs (ZeRO-1 over 8) it is
// AdamW's minus one moment of the Muon matrices, plus the exchange workspace,
// by hand for a dense model.
TEST(OptimizerPlan, MemoryEqualsTheAllocation) {
  auto run = load_run_config(std::string(MT_SOURCE_DIR) + "/configs/tiny-test.toml", {"optim.name=muon"});
  ASSERT_TRUE(run.is_ok()) << run.status().message();
  ModelConfig latent = run->model;
  latent.d_latent = 32;
  latent.n_shared_experts = 1;
  latent.n_dense_layers = 1;
  // The other layer kinds: MLA (its down projections), an MTP module (its block and projection) and
  // gated-delta layers (their fused input projection; A_log and dt_bias stay with AdamW).
  ModelConfig mla = run->model, mtp = run->model, delta = run->model;
  mla.attention = AttentionKind::kMla;
  mla.q_lora_rank = 24, mla.kv_lora_rank = 16, mla.qk_nope_head_dim = 8, mla.qk_rope_head_dim = 4,
  mla.v_head_dim = 8;
  mtp.mtp_depth = 1;
  delta.layer_pattern = "DG";
  for (const ModelConfig& c : {run->model, latent, mla, mtp, delta}) {
    const plan::ClusterConfig cpu = plan::one_cpu_cluster("cpu");
    plan::LayoutConfig l;
    l.source = "l.toml";
    l.gpus = 1;
    l.global_batch = 4;
    l.micro_batch = 4;
    l.params = plan::Precision::kFp32;
    l.optimizer = plan::OptimizerKind::kMuon;
    auto p = plan::resolve(l, c, 64, cpu);
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    const plan::MemoryBreakdown mem = plan::memory_per_gpu(c, plan::model_stats(c, 64), *p, cpu);
    ParamLayout L;
    build_layout(c, L);
    LocalComm comm;
    const Optimizer opt(L, run->train.optim, run->train.optimizer, run->train.schedule.lr, comm);
    EXPECT_EQ(mem.optimizer_state, double(opt.state_bytes()));
    EXPECT_EQ(mem.optimizer_workspace, 4.0 * double(opt.muon_workspace_floats()));
    EXPECT_GT(mem.optimizer_workspace, 0.0);
    // Moments in bf16: half the bytes, allocated and planned.
    OptimizerConfig half = run->train.optimizer;
    half.state_precision = StatePrecision::kBf16;
    l.moments = plan::Precision::kBf16;
    auto ph = plan::resolve(l, c, 64, cpu);
    ASSERT_TRUE(ph.is_ok()) << ph.status().message();
    const Optimizer opt16(L, run->train.optim, half, run->train.schedule.lr, comm);
    EXPECT_EQ(plan::memory_per_gpu(c, plan::model_stats(c, 64), *ph, cpu).optimizer_state, double(opt16.state_bytes()));
    EXPECT_EQ(2 * opt16.state_bytes(), opt.state_bytes());
  }

  ModelConfig m = testing::tiny_dense_config();  // D 64, 2 layers, MHA, SwiGLU 128, vocab 1000, tied
  const plan::ClusterConfig h100 = testing::h100_cluster();
  plan::LayoutConfig l;
  l.source = "l.toml";
  l.gpus = 8;
  l.zero_stage = 1;
  l.global_batch = 8;
  auto adamw = plan::resolve(l, m, 32, h100);
  l.optimizer = plan::OptimizerKind::kMuon;
  auto muon = plan::resolve(l, m, 32, h100);
  ASSERT_TRUE(adamw.is_ok() && muon.is_ok());
  const plan::ModelStats s = plan::model_stats(m, 32);
  const plan::MemoryBreakdown a = plan::memory_per_gpu(m, s, *adamw, h100), u = plan::memory_per_gpu(m, s, *muon, h100);
  // Muon's matrices: per layer attention 4 x 64 x 64 = 16384 and SwiGLU 3 x 128 x 64 = 24576.
  EXPECT_EQ(plan::muon_params(m, s), 2 * (16384 + 24576));
  // Largest matrix 128 x 64: scratch 2 x 64 x 128 + 2 x 64^2 = 24576 floats.
  EXPECT_EQ(plan::muon_scratch_floats(m), 24576);
  const double shard = 81920.0 / 8;  // ZeRO-1 over 8 ranks
  EXPECT_DOUBLE_EQ(a.optimizer_state - u.optimizer_state, 4.0 * shard);
  EXPECT_DOUBLE_EQ(u.optimizer_workspace, 4.0 * (3.0 * shard + 24576));
  EXPECT_EQ(a.optimizer_workspace, 0.0);
  EXPECT_NEAR(u.total() - a.total(), u.optimizer_workspace - 4.0 * shard, 1e-6 * u.total());
  // bf16 moments (precision.optimizer_state): half of AdamW's fp32 state.
  l.optimizer = plan::OptimizerKind::kAdamW;
  l.moments = plan::Precision::kBf16;
  auto adamw16 = plan::resolve(l, m, 32, h100);
  ASSERT_TRUE(adamw16.is_ok());
  EXPECT_DOUBLE_EQ(plan::memory_per_gpu(m, s, *adamw16, h100).optimizer_state, a.optimizer_state / 2);
}

// MLA's down projections and the MTP modules are Muon's matrices too (the planner models both before the
// CPU trainer does): counted by hand for one small configuration.
TEST(PlanMemory, MuonCountsMlaAndMtpMatrices) {
  ModelConfig m;
  m.vocab_size = 1000;
  m.d_model = 64;
  m.n_layers = 2;
  m.n_heads = 4;
  m.d_ff = 128;
  m.attention = AttentionKind::kMla;
  m.q_lora_rank = 32;
  m.kv_lora_rank = 16;
  m.qk_nope_head_dim = 8;
  m.qk_rope_head_dim = 4;
  m.v_head_dim = 8;
  m.mtp_depth = 1;
  const plan::ModelStats s = plan::model_stats(m, 32);
  // Per layer: W_DQ 32x64 + W_DKV (16+4)x64 = 3328, W_UQ 4x12x32 = 1536, W_UK and W_UV 4x8x16 = 512 each,
  // W_O 64x32 = 2048; SwiGLU 3x128x64 = 24576: 32512. The MTP module: one such block + its 64x128 projection.
  EXPECT_EQ(plan::muon_params(m, s), 2 * 32512 + (32512 + 8192));
  // With a narrow FFN (32 x 64) the MTP projection (64 x 128) is the largest matrix and sizes the scratch.
  m.d_ff = 32;
  EXPECT_EQ(plan::muon_scratch_floats(m), newton_schulz_scratch(64, 128));
  m.mtp_depth = 0;
  EXPECT_LT(plan::muon_scratch_floats(m), newton_schulz_scratch(64, 128));
}

// ---------------------------------------------------------------- config

TEST(OptimizerConfig, StrictKeys) {
  auto err = [](const std::string& text) {
    auto r = parse_run_config(text, "o.toml", {});
    return r.is_ok() ? std::string("ok") : r.status().message();
  };
  EXPECT_EQ(err("[optim]\nname = \"muon\"\nhyperball = true\n"), "ok");
  EXPECT_NE(err("[optim]\nname = \"sgd\"\n").find("optim.name"), std::string::npos);
  const std::string wrap = err("[optim]\nhyperball = true\nhyperball_wrap = [\"attn\", \"embed\"]\n");
  EXPECT_NE(wrap.find("optim.hyperball_wrap"), std::string::npos) << wrap;
  EXPECT_NE(wrap.find("\"embed\""), std::string::npos) << wrap;
  EXPECT_NE(err("[optim]\nhyperball = true\nhyperball_wrap = []\n").find("wrap nothing"), std::string::npos);
  EXPECT_NE(err("[optim]\nns_coefficients = [3.4445, -4.775]\n").find("optim.ns_coefficients"), std::string::npos);
  EXPECT_NE(err("[optim]\nns_step = 5\n").find("ns_step"), std::string::npos);  // unknown key
}

TEST(OptimizerConfig, TensorClassesAndRules) {
  ParamLayout L;
  L.add("embed", {8, 4}, ParamKind::kEmbedding);
  L.add("layers.0.attn.wo", {4, 4}, ParamKind::kMatrix, 0);
  L.add("layers.0.moe.router", {4, 4}, ParamKind::kMatrix, 0);
  L.add("layers.0.moe.down", {2, 4}, ParamKind::kMatrix, 0);
  L.add("layers.0.moe.shared.0.w1", {4, 4}, ParamKind::kMatrix, 0);
  L.add("layers.0.moe.experts.3.w2", {4, 4}, ParamKind::kMatrix, 0, 3);
  L.add("layers.0.mlp.w3", {4, 4}, ParamKind::kMatrix, 0);
  L.add("head", {8, 4}, ParamKind::kMatrix);
  const std::vector<std::string> want = {"embed", "attn", "router", "latent", "shared", "experts", "mlp", "head"};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(tensor_class_name(tensor_class(L.entries()[i])), want[i]);
  OptimizerConfig c;
  c.name = OptimizerName::kMuon;
  c.hyperball = true;
  c.hyperball_wrap = {"experts", "router"};
  const AdamWConfig a;
  const std::vector<BaseOptimizer> base = {BaseOptimizer::kAdamW, BaseOptimizer::kMuon,  BaseOptimizer::kAdamW,
                                           BaseOptimizer::kMuon,  BaseOptimizer::kMuon,  BaseOptimizer::kMuon,
                                           BaseOptimizer::kMuon,  BaseOptimizer::kAdamW};
  for (size_t i = 0; i < want.size(); ++i) {
    const TensorRule r = tensor_rule(L.entries()[i], c, a);
    EXPECT_EQ(r.base, base[i]) << want[i];
    EXPECT_EQ(r.hyperball, want[i] == "experts" || want[i] == "router") << want[i];
    EXPECT_EQ(r.weight_decay, r.hyperball || want[i] == "embed" ? 0.0 : a.weight_decay) << want[i];
    EXPECT_EQ(r.aux, want[i] == "embed" || want[i] == "head") << want[i];  // AdamW, not wrapped
  }
  // Plain AdamW: aux_lr is the lr of the embedding, norms, router and head.
  const OptimizerConfig plain;
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(tensor_rule(L.entries()[i], plain, a).aux, want[i] == "embed" || want[i] == "router" || want[i] == "head")
        << want[i];
}

// Plain AdamW with aux_lr: the embedding, norms and head step at aux_lr, the
// hidden matrices at train.lr (the same AdamW kernel).
TEST(Optimizer, AuxLrUnderPlainAdamW) {
  const ParamLayout L = small_layout();
  AdamWConfig a;
  a.grad_clip = 0;
  OptimizerConfig c;
  c.aux_lr = 0.03;
  LocalComm comm;
  Optimizer opt(L, a, c, 0.01, comm);
  const std::vector<float> p0 = init(L);
  std::vector<float> p = p0;
  const auto g = randn(L.total(), 1.0f, 13);
  opt.step(p.data(), g.data(), 0.005, 1);  // the schedule at half the peak: aux at 0.015
  for (const ParamEntry& e : L.entries()) {
    SCOPED_TRACE(e.name);
    const bool hidden = e.name.find(".attn.") != std::string::npos || e.name.find(".mlp.") != std::string::npos;
    std::vector<float> q(p0.begin() + e.offset, p0.begin() + e.offset + e.numel), m(size_t(e.numel), 0.0f),
        v(size_t(e.numel), 0.0f);
    const float wd = e.kind == ParamKind::kMatrix ? float(a.weight_decay) : 0.0f;
    adamw_update(q.data(), m.data(), v.data(), g.data() + e.offset, e.numel,
                 AdamWParams{hidden ? 0.005f : float(0.005 * (0.03 / 0.01)), 0.9f, 0.95f, 1e-8f, wd, 1.0f, 1});
    for (int64_t i = 0; i < e.numel; ++i) ASSERT_EQ(p[size_t(e.offset + i)], q[size_t(i)]) << i;
  }
}

}  // namespace
}  // namespace mt
