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

// The planner reads the law a ladder fit wrote (`moetrain ladder fit --out`),
// through the same checks as a [fit] table; a fit with a sparsity term is refused.
TEST(PlanScalingLaw, LoadsALadderFitJson) {
  const std::string dir = ::testing::TempDir();
  const std::string ok = dir + "/fit.json", sparse = dir + "/sparse.json", bad = dir + "/bad.json";
  std::ofstream(ok) << R"({"law": {"E": 1.8, "A": 480.0, "B": 2100.0, "alpha": 0.35, "beta": 0.37, "n": "active"}})";
  std::ofstream(sparse) << R"({"law": {"E": 1.8, "A": 480.0, "B": 2100.0, "alpha": 0.35, "beta": 0.37, "gamma": 0.1}})";
  std::ofstream(bad) << R"({"law": {"E": 1.8, "A": -1.0, "B": 2100.0, "alpha": 0.35, "beta": 0.37}})";
  auto law = load_scaling_law(ok);
  ASSERT_TRUE(law.is_ok()) << law.status().message();
  EXPECT_EQ(law->E, 1.8);
  EXPECT_EQ(law->alpha, 0.35);
  EXPECT_EQ(law->name, "ladder fit " + ok);
  EXPECT_NEAR(loss(*law, 1e9, 2e10), 1.8 + 480.0 / std::pow(1e9, 0.35) + 2100.0 / std::pow(2e10, 0.37), 1e-12);
  auto s = load_scaling_law(sparse);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.status().message().find("sparsity term"), std::string::npos) << s.status().message();
  auto b = load_scaling_law(bad);
  ASSERT_FALSE(b.is_ok());
  EXPECT_NE(b.status().message().find("fit.A: expected float > 0, got -1"), std::string::npos) << b.status().message();
}

}  // namespace
}  // namespace mt::plan
