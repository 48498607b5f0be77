// policy_loss_gradcheck_test.cpp — GRPO's per-token loss (kernels/cpu/policy_loss.h)
// against a plain double-precision evaluation of its formula: the loss, the
// stats, and the logits' gradient by central differences of that reference,
// with tokens on both sides of both clip bounds, the KL term on, an ignored
// row; and on-policy (ratio 1, no KL) it is REINFORCE: the cross-entropy
// gradient scaled by -A * weight.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/policy_loss.h"

namespace mt {
namespace {

struct Case {
  int64_t R = 8, V = 37;
  std::vector<float> logits, weights, adv, old_lp, ref_lp;
  std::vector<int32_t> targets;
  PolicyLossParams p;
};

double log_prob(const std::vector<double>& z, int32_t y) {
  double m = *std::max_element(z.begin(), z.end()), s = 0.0;
  for (double v : z) s += std::exp(v - m);
  return z[size_t(y)] - m - std::log(s);
}

// The loss of row r from its logits, in double.
double row_loss(const Case& k, int64_t r, const std::vector<double>& z) {
  if (k.targets[size_t(r)] < 0) return 0.0;
  const double lp = log_prob(z, k.targets[size_t(r)]);
  const double q = std::exp(lp - k.old_lp[size_t(r)]), A = k.adv[size_t(r)];
  const double qc = std::clamp(q, 1.0 - k.p.clip_low, 1.0 + k.p.clip_high);
  double L = -std::min(q * A, qc * A);
  if (k.p.kl_beta != 0.0f) {
    const double d = k.ref_lp[size_t(r)] - lp;
    L += k.p.kl_beta * (std::exp(d) - d - 1.0);
  }
  return k.weights[size_t(r)] * L;
}

std::vector<double> row_of(const Case& k, int64_t r) {
  return std::vector<double>(k.logits.begin() + r * k.V, k.logits.begin() + (r + 1) * k.V);
}

Case make_case() {
  Case k;
  std::mt19937 rng(5);
  std::normal_distribution<float> n(0.0f, 1.5f);
  k.logits.resize(size_t(k.R * k.V));
  for (float& x : k.logits) x = n(rng);
  k.p.clip_low = 0.2f;
  k.p.clip_high = 0.28f;
  k.p.kl_beta = 0.04f;
  for (int64_t r = 0; r < k.R; ++r) {
    const int32_t y = int32_t((r * 11 + 3) % k.V);
    k.targets.push_back(r == 5 ? -1 : y);
    k.weights.push_back(0.1f + 0.05f * float(r));
    k.adv.push_back(r % 4 >= 2 ? -0.7f : 1.3f);  // 1: A > 0 past 1 + clip_high; 2: A < 0 below 1 - clip_low
    const double lp = log_prob(row_of(k, r), y);
    // Ratios: well inside, past 1 + clip_high, below 1 - clip_low, for either sign of A.
    const double log_ratio[] = {0.05, 0.6, -0.6, 0.0};
    k.old_lp.push_back(float(lp - log_ratio[r % 4]));
    k.ref_lp.push_back(float(lp + 0.3 * (r % 3 - 1)));
  }
  return k;
}

TEST(PolicyLoss, MatchesTheFormulaAndCentralDifferences) {
  Case k = make_case();
  std::vector<float> losses(size_t(k.R)), grad = k.logits;
  std::vector<PolicyTokenStats> st(size_t(k.R));
  policy_loss_forward_backward(losses.data(), st.data(), grad.data(), k.targets.data(), k.weights.data(), k.adv.data(),
                               k.old_lp.data(), k.ref_lp.data(), k.R, k.V, k.p, 1.0f);
  int clipped = 0, kept = 0;
  for (int64_t r = 0; r < k.R; ++r) {
    EXPECT_NEAR(losses[size_t(r)], row_loss(k, r, row_of(k, r)), 2e-6) << "row " << r;
    clipped += st[size_t(r)].clipped;
    kept += k.targets[size_t(r)] >= 0 && !st[size_t(r)].clipped;
    if (k.targets[size_t(r)] >= 0) EXPECT_NEAR(st[size_t(r)].logp, log_prob(row_of(k, r), k.targets[size_t(r)]), 2e-6);
    for (int64_t v = 0; v < k.V; ++v) {
      std::vector<double> zp = row_of(k, r), zm = zp;
      const double eps = 1e-4;
      zp[size_t(v)] += eps;
      zm[size_t(v)] -= eps;
      const double numeric = (row_loss(k, r, zp) - row_loss(k, r, zm)) / (2 * eps);
      EXPECT_NEAR(grad[size_t(r * k.V + v)], numeric, 1e-5) << "row " << r << " logit " << v;
    }
  }
  EXPECT_GE(clipped, 2) << "the case meant to clip some tokens";
  EXPECT_GE(kept, 3);
  EXPECT_EQ(losses[5], 0.0f);
  EXPECT_EQ(st[5].clipped, 0);
}

TEST(PolicyLoss, OnPolicyWithoutKlIsReinforce) {
  Case k = make_case();
  k.p.kl_beta = 0.0f;
  for (int64_t r = 0; r < k.R; ++r)
    if (k.targets[size_t(r)] >= 0) k.old_lp[size_t(r)] = float(log_prob(row_of(k, r), k.targets[size_t(r)]));
  std::vector<float> losses(size_t(k.R)), grad = k.logits, ce_grad = k.logits, ce_loss(size_t(k.R));
  std::vector<PolicyTokenStats> st(size_t(k.R));
  policy_loss_forward_backward(losses.data(), st.data(), grad.data(), k.targets.data(), k.weights.data(), k.adv.data(),
                               k.old_lp.data(), nullptr, k.R, k.V, k.p, 0.5f);
  for (int64_t r = 0; r < k.R; ++r) {
    const float scale = -k.adv[size_t(r)] * k.weights[size_t(r)] * 0.5f;
    cross_entropy_forward_backward(ce_loss.data() + r, ce_grad.data() + r * k.V, k.targets.data() + r, 1, k.V, scale);
    EXPECT_EQ(st[size_t(r)].clipped, 0);
    for (int64_t v = 0; v < k.V; ++v)
      EXPECT_NEAR(grad[size_t(r * k.V + v)], -ce_grad[size_t(r * k.V + v)], 1e-6) << r << " " << v;
  }
}

}  // namespace
}  // namespace mt
