// interop_distill_loss_test.cpp — the distillation losses and their
// gradient (kernels/cpu/distill_loss.h) against PyTorch autograd on the same
// inputs (tools/interop/distill_loss_check.py, in the interop venv, through
// torch.nn.functional.kl_div): every row's loss and every logit's gradient
// to fp32 round-off, reverse KL (on-policy distillation) and forward KL
// (knowledge distillation), with a skipped row.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "kernels/cpu/distill_loss.h"
#include "support/e2e.h"

namespace mt::e2e {
namespace {

using nlohmann::json;

TEST(InteropDistillLoss, LossAndGradientMatchPyTorch) {
  std::string venv_error;
  const std::string python = interop_python(venv_error);
  ASSERT_FALSE(python.empty()) << venv_error;
  const int64_t R = 10, V = 60;
  std::mt19937 rng(13);
  std::normal_distribution<float> n(0.0f, 2.0f);
  std::vector<float> logits(static_cast<size_t>(R * V)), teacher(static_cast<size_t>(R * V)), weights;
  for (float& x : logits) x = n(rng);
  for (float& x : teacher) x = n(rng);
  for (int64_t r = 0; r < R; ++r) weights.push_back(r == 4 ? 0.0f : 0.05f + 0.02f * float(r));
  for (const char* name : {"reverse", "forward"}) {
    const DistillDivergence d =
        std::string(name) == "reverse" ? DistillDivergence::kReverseKl : DistillDivergence::kForwardKl;
    std::vector<float> lt = teacher, losses(static_cast<size_t>(R)), grad = logits;
    log_softmax_rows(lt.data(), R, V);
    distill_loss_forward_backward(losses.data(), grad.data(), lt.data(), weights.data(), R, V, d, 1.0f);
    TempDir tmp;
    const json in = {{"R", R},
                     {"V", V},
                     {"logits", logits},
                     {"teacher_logits", teacher},
                     {"weights", weights},
                     {"divergence", name}};
    write_file(tmp / "case.json", in.dump());
    const auto py = run_process(
        {"/bin/sh", "-c",
         python + " " + std::string(MT_SOURCE_DIR) + "/tools/interop/distill_loss_check.py < " + (tmp / "case.json")},
        120);
    ASSERT_EQ(py.exit_code, 0) << py;
    const json ref = json::parse(py.out);
    const auto off = [](double a, double b) { return std::abs(a - b) / std::max(1.0, std::abs(b)); };
    double worst_loss = 0.0, worst_grad = 0.0;
    for (int64_t r = 0; r < R; ++r)
      worst_loss = std::max(worst_loss, off(losses[size_t(r)], ref["losses"][size_t(r)].get<double>()));
    for (int64_t i = 0; i < R * V; ++i)
      worst_grad = std::max(worst_grad, off(grad[size_t(i)], ref["grad"][size_t(i)].get<double>()));
    EXPECT_LT(worst_loss, 4e-6) << name << ": largest relative |moetrain - PyTorch| of a row's loss";
    EXPECT_LT(worst_grad, 2e-6) << name << ": largest relative |moetrain - PyTorch| of the logits' gradient";
    std::cout << "[interop] " << name << " KL vs PyTorch: loss " << worst_loss << ", gradient " << worst_grad << "\n";
  }
}

}  // namespace
}  // namespace mt::e2e
