// plan_scaling_law_test.cpp — the param:data trade: compute-optimal
// allocation (closed form against a numeric minimum; the published
// tokens-per-parameter figures at Chinchilla's budget), over-training, the
// isoFLOP curve and loading a fit from TOML.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "plan/scaling_law.h"

namespace mt::plan {
namespace {

using ::testing::HasSubstr;

TEST(PlanScalingLaw, PublishedOptimaAtChinchillaCompute) {
  const double C = 5.76e23;
  // shared/reference/chinchilla: ~18 tokens per parameter with the replication's fit, ~93 with Hoffmann's rounded one.
  EXPECT_NEAR(compute_optimal(besiroglu2024(), C).tokens_per_param(), 18.0, 1.0);
  EXPECT_NEAR(compute_optimal(hoffmann2022(), C).tokens_per_param(), 93.0, 3.0);
  const Allocation a = compute_optimal(besiroglu2024(), C);
  EXPECT_NEAR(6 * a.N * a.D, C, 1e-6 * C);
}

TEST(PlanScalingLaw, ClosedFormIsTheIsoFlopMinimum) {
  const ScalingLaw s = besiroglu2024();
  for (double C : {1e20, 1e23, 3e25}) {
    const Allocation a = compute_optimal(s, C);
    const auto curve = isoflop_curve(s, C, a.N / 10, a.N * 10, 2001);
    auto best = curve.front();
    for (const auto& pt : curve)
      if (pt.second < best.second) best = pt;
    EXPECT_NEAR(std::log(best.first), std::log(a.N), 0.01) << C;
    EXPECT_NEAR(best.second, a.loss, 1e-6) << C;
  }
}

TEST(PlanScalingLaw, Overtraining) {
  const ScalingLaw s = besiroglu2024();
  const double C = 1e24;
  const Allocation opt = compute_optimal(s, C);
  const Overtrain one = overtrain(s, C, 1.0);
  EXPECT_NEAR(one.loss_penalty, 0.0, 1e-12);
  EXPECT_NEAR(one.inference_saving, 0.0, 1e-12);
  const Overtrain four = overtrain(s, C, 4.0);
  EXPECT_NEAR(four.at.N, opt.N / 2, 1e-6 * opt.N);
  EXPECT_NEAR(four.at.D, opt.D * 2, 1e-6 * opt.D);
  EXPECT_NEAR(four.inference_saving, 0.5, 1e-12);
  EXPECT_GT(four.loss_penalty, 0.0);
  EXPECT_GT(overtrain(s, C, 13.0).loss_penalty, four.loss_penalty);
  EXPECT_NEAR(overtrain_factor(s, four.at.N, four.at.D), 4.0, 1e-9);
  EXPECT_NEAR(loss(s, 1e9, 1e12), 1.8172 + 482.01 / std::pow(1e9, 0.3478) + 2085.43 / std::pow(1e12, 0.3658), 1e-12);
}

TEST(PlanScalingLaw, LoadFromToml) {
  auto hoff = load_scaling_law("hoffmann2022");
  ASSERT_TRUE(hoff.is_ok());
  EXPECT_DOUBLE_EQ(hoff->alpha, 0.34);
  auto fit = parse_scaling_law("[fit]\nname = \"mine\"\nE = 1.7\nA = 400\nB = 400\nalpha = 0.3\nbeta = 0.3\n", "f.toml");
  ASSERT_TRUE(fit.is_ok()) << fit.status().message();
  EXPECT_EQ(fit->name, "mine");
  auto missing = parse_scaling_law("[fit]\nE = 1.7\nA = 400\nB = 400\nalpha = 0.3\n", "f.toml");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("f.toml: fit.beta: required key missing"));
  auto negative = parse_scaling_law("[fit]\nE = 1.7\nA = -4\nB = 400\nalpha = 0.3\nbeta = 0.3\n", "f.toml");
  ASSERT_FALSE(negative.is_ok());
  EXPECT_THAT(negative.status().message(), HasSubstr("f.toml:3: fit.A: expected float > 0, got -4"));
  auto nofile = load_scaling_law("/nonexistent/fit.toml");
  ASSERT_FALSE(nofile.is_ok());
  EXPECT_THAT(nofile.status().message(), HasSubstr("/nonexistent/fit.toml: cannot open scaling-law file"));
}

}  // namespace
}  // namespace mt::plan
