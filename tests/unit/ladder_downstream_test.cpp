// ladder_downstream_test.cpp — the Llama 3 style two-step projection
// (src/ladder/downstream.h): the loss -> accuracy sigmoid is recovered from
// noisy runs; compute -> loss -> accuracy lands near the truth with an
// interval that carries both steps' uncertainty; tasks with too few runs are
// noted rather than fitted.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "ladder/analysis.h"
#include "support/ladder_synthetic.h"

namespace mt::ladder {
namespace {

using ::testing::HasSubstr;

const Sigmoid kTruth{0.25, 2.6, 5.0};  // 4-way multiple choice

TEST(LadderDownstream, RecoversTheSigmoid) {
  const std::vector<float> noise = testing::randn(40, 0.005f, 3);
  std::vector<double> loss, acc;
  for (int i = 0; i < 40; ++i) {
    loss.push_back(2.0 + 1.5 * i / 39.0);
    acc.push_back(sigmoid_accuracy(kTruth, loss.back()) + noise[size_t(i)]);
  }
  auto fit = fit_downstream("mc", loss, acc, 0.25);
  ASSERT_TRUE(fit) << fit.status().message();
  EXPECT_NEAR(fit->sigmoid.L0, kTruth.L0, 0.02);
  EXPECT_NEAR(fit->sigmoid.k, kTruth.k, 0.5);
  EXPECT_EQ(fit->sigmoid.floor, 0.25);
  EXPECT_LT(fit->rmse, 0.01);
  EXPECT_GT(fit->rmse, 0.002);  // the noise is there, not overfitted away
  EXPECT_NEAR(sigmoid_accuracy(fit->sigmoid, 100.0), 0.25, 1e-9);
  EXPECT_NEAR(sigmoid_accuracy(fit->sigmoid, 0.0), 1.0, 1e-4);
}

TEST(LadderDownstream, TwoStepProjection) {
  const Law law = testing::known_law();
  std::vector<ladder::Run> runs =
      testing::grid_runs(law, testing::logspace(1e7, 1e10, 6), testing::logspace(1e9, 1e12, 6), 0.005, 9);
  testing::add_accuracy(runs, "mc", kTruth, 0.01, 9);
  LadderOptions opt;
  opt.fit.grid_a = {0, 5, 10};
  opt.fit.grid_b = {0, 5, 10};
  opt.bootstrap = {60, 2, 0.95};
  opt.chance = {{"mc", 0.25}};
  opt.target.flops = 1e22;
  auto a = analyze(runs, opt);
  ASSERT_TRUE(a) << a.status().message();
  ASSERT_EQ(a->downstream.size(), 1u);
  EXPECT_EQ(a->downstream[0].runs, 36);
  const Estimate& acc = a->projection.compute_optimal->accuracy.at("mc");
  const double truth = sigmoid_accuracy(kTruth, compute_optimal(law, 1e22).loss);
  EXPECT_NEAR(acc.value, truth, 0.03);
  EXPECT_EQ(acc.resamples, 60);
  EXPECT_GT(acc.se, 0);
  EXPECT_LE(acc.lo, truth + 0.01);
  EXPECT_GE(acc.hi, truth - 0.01);
}

TEST(LadderDownstream, TooFewRunsAreNotedNotFitted) {
  std::vector<ladder::Run> runs =
      testing::grid_runs(testing::known_law(), testing::logspace(1e7, 1e10, 3), testing::logspace(1e9, 1e12, 3), 0, 1);
  runs[0].accuracy["rare"] = 0.3;
  runs[1].accuracy["rare"] = 0.4;
  LadderOptions opt;
  opt.fit.grid_a = {5};
  opt.fit.grid_b = {5};
  auto a = analyze(runs, opt);
  ASSERT_TRUE(a) << a.status().message();
  EXPECT_TRUE(a->downstream.empty());
  ASSERT_EQ(a->notes.size(), 1u);
  EXPECT_THAT(a->notes[0], HasSubstr("accuracy 'rare': 2 run(s) report it"));
  opt.chance = {{"other", 0.25}};
  auto b = analyze(runs, opt);
  ASSERT_FALSE(b);
  EXPECT_THAT(b.status().message(), HasSubstr("'other', which no run reports"));
}

}  // namespace
}  // namespace mt::ladder
