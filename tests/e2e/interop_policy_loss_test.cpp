// interop_policy_loss_test.cpp — GRPO's per-token loss and its gradient
// (kernels/cpu/policy_loss.h) against PyTorch autograd on the same inputs
// (tools/interop/policy_loss_check.py, in the interop venv): every row's
// loss and every logit's gradient to fp32 round-off, with tokens clipped
// above and below, the KL term on and an ignored row.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "kernels/cpu/policy_loss.h"
#include "support/e2e.h"

namespace mt::e2e {
namespace {

using nlohmann::json;

TEST(InteropPolicyLoss, LossAndGradientMatchPyTorch) {
  std::string venv_error;
  const std::string python = interop_python(venv_error);
  ASSERT_FALSE(python.empty()) << venv_error;

  const int64_t R = 12, V = 50;
  std::mt19937 rng(11);
  std::normal_distribution<float> n(0.0f, 2.0f);
  std::vector<float> logits(static_cast<size_t>(R * V)), weights, adv, old_lp, ref_lp;
  std::vector<int32_t> targets;
  for (float& x : logits) x = n(rng);
  std::normal_distribution<float> shift(0.0f, 0.4f);
  for (int64_t r = 0; r < R; ++r) {
    const int32_t y = int32_t((r * 13 + 1) % V);
    double m = -1e30, s = 0.0;
    for (int64_t v = 0; v < V; ++v) m = std::max(m, double(logits[size_t(r * V + v)]));
    for (int64_t v = 0; v < V; ++v) s += std::exp(double(logits[size_t(r * V + v)]) - m);
    const float lp = float(logits[size_t(r * V + y)] - m - std::log(s));
    targets.push_back(r == 7 ? -1 : y);
    weights.push_back(1.0f / float(R) + 0.01f * float(r));
    adv.push_back(r % 3 == 0 ? -1.1f : 0.9f);
    old_lp.push_back(lp + shift(rng));  // ratios around 1, on both sides of both bounds
    ref_lp.push_back(lp + shift(rng));
  }
  PolicyLossParams p;
  p.clip_low = 0.2f;
  p.clip_high = 0.28f;
  p.kl_beta = 0.05f;
  std::vector<float> losses(static_cast<size_t>(R)), grad = logits;
  std::vector<PolicyTokenStats> st(static_cast<size_t>(R));
  policy_loss_forward_backward(losses.data(), st.data(), grad.data(), targets.data(), weights.data(), adv.data(),
                               old_lp.data(), ref_lp.data(), R, V, p, 1.0f);
  int clipped = 0;
  for (const auto& s : st) clipped += s.clipped;
  EXPECT_GE(clipped, 1) << "no token of the case is clipped";

  TempDir tmp;
  const json in = {{"R", R},
                   {"V", V},
                   {"logits", logits},
                   {"targets", targets},
                   {"weights", weights},
                   {"advantages", adv},
                   {"old_logp", old_lp},
                   {"ref_logp", ref_lp},
                   {"clip_low", p.clip_low},
                   {"clip_high", p.clip_high},
                   {"kl_beta", p.kl_beta}};
  write_file(tmp / "case.json", in.dump());
  const auto py = run_process(
      {"/bin/sh", "-c",
       python + " " + std::string(MT_SOURCE_DIR) + "/tools/interop/policy_loss_check.py < " + (tmp / "case.json")},
      120);
  ASSERT_EQ(py.exit_code, 0) << py;
  const json ref = json::parse(py.out);
  // fp32 against PyTorch's float64: a few ulps of the larger of 1 and the value.
  const auto off = [](double a, double b) { return std::abs(a - b) / std::max(1.0, std::abs(b)); };
  double worst_loss = 0.0, worst_grad = 0.0;
  for (int64_t r = 0; r < R; ++r)
    worst_loss = std::max(worst_loss, off(losses[size_t(r)], ref["losses"][size_t(r)].get<double>()));
  for (int64_t i = 0; i < R * V; ++i)
    worst_grad = std::max(worst_grad, off(grad[size_t(i)], ref["grad"][size_t(i)].get<double>()));
  EXPECT_LT(worst_loss, 2e-6) << "largest relative |moetrain - PyTorch| of a row's loss";
  EXPECT_LT(worst_grad, 2e-6) << "largest relative |moetrain - PyTorch| of the logits' gradient";
  std::cout << "[interop] policy loss vs PyTorch: loss " << worst_loss << ", gradient " << worst_grad << "\n";
}

}  // namespace
}  // namespace mt::e2e
