// distill_loss_gradcheck_test.cpp — the distillation losses
// (kernels/cpu/distill_loss.h) against a double-precision evaluation of
// their formulas and central differences of it, for reverse and forward KL,
// with a skipped row; and the identities that could fail: both are 0 where
// the student equals the teacher, and forward KL's gradient is the
// cross-entropy's against the teacher's distribution. The student's entropy
// per row, which runs report, against its formula.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/distill_loss.h"

namespace mt {
namespace {

std::vector<double> log_softmax(const double* z, int64_t V) {
  double m = *std::max_element(z, z + V), s = 0.0;
  for (int64_t v = 0; v < V; ++v) s += std::exp(z[v] - m);
  std::vector<double> out(static_cast<size_t>(V));
  for (int64_t v = 0; v < V; ++v) out[size_t(v)] = z[v] - m - std::log(s);
  return out;
}

double row_loss(const double* z, const float* lt, int64_t V, DistillDivergence d) {
  const std::vector<double> ls = log_softmax(z, V);
  double L = 0.0;
  for (int64_t v = 0; v < V; ++v)
    L += d == DistillDivergence::kReverseKl ? std::exp(ls[size_t(v)]) * (ls[size_t(v)] - lt[v])
                                            : std::exp(double(lt[v])) * (lt[v] - ls[size_t(v)]);
  return L;
}

class DistillLoss : public ::testing::TestWithParam<DistillDivergence> {};

TEST_P(DistillLoss, MatchesTheFormulaAndCentralDifferences) {
  const DistillDivergence d = GetParam();
  const int64_t R = 6, V = 29;
  std::mt19937 rng(7);
  std::normal_distribution<float> n(0.0f, 1.5f);
  std::vector<float> z(static_cast<size_t>(R * V)), lt(static_cast<size_t>(R * V)),
      w = {0.3f, 0.1f, 0.0f, 0.25f, 0.2f, 0.15f};
  for (float& x : z) x = n(rng);
  for (float& x : lt) x = n(rng);
  log_softmax_rows(lt.data(), R, V);
  std::vector<float> losses(static_cast<size_t>(R)), grad = z, entropy(static_cast<size_t>(R), -1.0f);
  distill_loss_forward_backward(losses.data(), grad.data(), lt.data(), w.data(), R, V, d, 1.0f, entropy.data());
  std::vector<float> losses_only(static_cast<size_t>(R)), grad_only = z;
  distill_loss_forward_backward(losses_only.data(), grad_only.data(), lt.data(), w.data(), R, V, d, 1.0f);
  EXPECT_EQ(losses_only, losses) << "reporting the entropy changes nothing else";
  EXPECT_EQ(grad_only, grad);
  for (int64_t r = 0; r < R; ++r) {
    std::vector<double> zr(z.begin() + r * V, z.begin() + (r + 1) * V);
    const double want = w[size_t(r)] * row_loss(zr.data(), lt.data() + r * V, V, d);
    EXPECT_NEAR(losses[size_t(r)], want, 1e-5 * std::max(1.0, std::abs(want))) << r;
    double H = 0.0;
    for (double ls : log_softmax(zr.data(), V)) H -= std::exp(ls) * ls;
    EXPECT_NEAR(entropy[size_t(r)], w[size_t(r)] == 0.0f ? 0.0 : H, 1e-5 * std::max(1.0, H)) << "entropy, row " << r;
    if (w[size_t(r)] == 0.0f) {
      for (int64_t v = 0; v < V; ++v) EXPECT_EQ(grad[size_t(r * V + v)], 0.0f);
      continue;
    }
    EXPECT_GT(losses[size_t(r)], 0.0f) << "a divergence of different distributions is positive";
    for (int64_t v = 0; v < V; ++v) {
      const double h = 1e-4;
      std::vector<double> up = zr, dn = zr;
      up[size_t(v)] += h;
      dn[size_t(v)] -= h;
      const double num = w[size_t(r)] *
                         (row_loss(up.data(), lt.data() + r * V, V, d) - row_loss(dn.data(), lt.data() + r * V, V, d)) /
                         (2 * h);
      EXPECT_NEAR(grad[size_t(r * V + v)], num, 2e-5) << "row " << r << " logit " << v;
    }
  }
}

TEST_P(DistillLoss, ZeroWhereTheStudentIsTheTeacher) {
  const int64_t R = 3, V = 17;
  std::vector<float> z(static_cast<size_t>(R * V));
  for (size_t i = 0; i < z.size(); ++i) z[i] = float(std::sin(double(i)) * 2.0);
  std::vector<float> lt = z;
  log_softmax_rows(lt.data(), R, V);
  std::vector<float> losses(static_cast<size_t>(R)), grad = z, w(static_cast<size_t>(R), 1.0f);
  distill_loss_forward_backward(losses.data(), grad.data(), lt.data(), w.data(), R, V, GetParam(), 1.0f);
  for (float l : losses) EXPECT_NEAR(l, 0.0f, 1e-6);
  for (float g : grad) EXPECT_NEAR(g, 0.0f, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Divergences, DistillLoss,
                         ::testing::Values(DistillDivergence::kReverseKl, DistillDivergence::kForwardKl),
                         [](const auto& info) {
                           return info.param == DistillDivergence::kReverseKl ? "reverse" : "forward";
                         });

}  // namespace
}  // namespace mt
