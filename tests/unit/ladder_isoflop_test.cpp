// ladder_isoflop_test.cpp — approach 2 (src/ladder/isoflop.h): parabolas are
// exact on quadratics; on isoFLOP curves drawn from a known law the fitted
// N* ~ C^a recovers a = beta / (alpha + beta); curves without an interior
// minimum and unlabelled runs are reported, not fitted.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "ladder/isoflop.h"
#include "support/ladder_synthetic.h"

namespace mt::ladder {
namespace {

using ::testing::HasSubstr;

TEST(LadderIsoflop, ParabolaIsExactOnAQuadratic) {
  std::vector<double> x = {-2, -1, 0, 1, 2, 3}, y;
  for (double v : x) y.push_back(3 - 0.5 * v + 0.25 * v * v);
  double c[3];
  ASSERT_TRUE(fit_parabola(x, y, c));
  EXPECT_NEAR(c[0], 3, 1e-12);
  EXPECT_NEAR(c[1], -0.5, 1e-12);
  EXPECT_NEAR(c[2], 0.25, 1e-12);
  EXPECT_FALSE(fit_parabola({1, 1, 2, 2}, {1, 2, 3, 4}, c));  // two distinct x
}

TEST(LadderIsoflop, RecoversTheComputeOptimalExponent) {
  const Law law = testing::known_law();
  const std::vector<double> budgets = testing::logspace(1e18, 1e21, 6);
  const std::vector<ladder::Run> runs = testing::isoflop_runs(law, budgets, 7, 4.0, 0.002, 5);
  const IsoflopFit fit = fit_isoflop(runs, ParamCount::kActive);
  ASSERT_TRUE(fit.fitted) << fit.why_not;
  EXPECT_EQ(fit.budgets_used, 6);
  const double a = law.beta / (law.alpha + law.beta);  // Hoffmann et al. (2022), eq. 4
  EXPECT_NEAR(fit.n_opt.exponent, a, 0.02);
  EXPECT_NEAR(fit.d_opt.exponent, 1 - a, 0.02);
  EXPECT_GT(fit.n_opt.exponent_se, 0);
  EXPECT_LT(fit.n_opt.exponent_se, 0.02);
  // C = 6 N D exactly, so the parabola in log D mirrors the one in log N.
  for (const BudgetCurve& b : fit.budgets) EXPECT_NEAR(6 * b.n_opt * b.d_opt / b.flops, 1.0, 1e-6) << b.label;
  // Every curve's minimum near the law's compute-optimal N (the curves are not exact parabolas in log N).
  for (const BudgetCurve& b : fit.budgets)
    EXPECT_NEAR(std::log(b.n_opt), std::log(compute_optimal(law, b.flops).N), 0.15) << b.label;
  EXPECT_NEAR(std::log(fit.n_opt.at(1e20)), std::log(compute_optimal(law, 1e20).N), 0.15);
}

TEST(LadderIsoflop, SaysWhyNotWhenTheDataDoNotAllowIt) {
  const Law law = testing::known_law();
  std::vector<ladder::Run> runs = testing::isoflop_runs(law, {1e18, 1e19, 1e20}, 5, 4.0, 0, 1);
  // Budget c1's runs all lie on one side of the optimum: no interior minimum.
  for (ladder::Run& r : runs)
    if (r.budget == "c1") {
      r.active_params *= 20;
      r.total_params = r.active_params;
      r.tokens = 1e19 / (6 * r.active_params);
      r.loss = law_loss(law, r.active_params, r.tokens);
    }
  const IsoflopFit fit = fit_isoflop(runs, ParamCount::kActive);
  EXPECT_FALSE(fit.fitted);
  EXPECT_THAT(fit.why_not, HasSubstr("2 isoFLOP budget(s) with an interior minimum, need 3"));
  ASSERT_EQ(fit.budgets.size(), 3u);
  EXPECT_FALSE(fit.budgets[1].used);
  EXPECT_THAT(fit.budgets[1].why_not, HasSubstr("outside the sampled sizes"));

  std::vector<ladder::Run> unlabelled = testing::isoflop_runs(law, {1e18, 1e19, 1e20}, 5, 4.0, 0, 1);
  for (ladder::Run& r : unlabelled) r.budget.clear();
  const IsoflopFit none = fit_isoflop(unlabelled, ParamCount::kActive);
  EXPECT_FALSE(none.fitted);
  EXPECT_THAT(none.why_not, HasSubstr("15 run(s) carry no 'budget' label"));

  std::vector<ladder::Run> two_sizes = testing::isoflop_runs(law, {1e18, 1e19, 1e20}, 2, 4.0, 0, 1);
  const IsoflopFit few = fit_isoflop(two_sizes, ParamCount::kActive);
  EXPECT_FALSE(few.fitted);
  EXPECT_THAT(few.budgets[0].why_not, HasSubstr("fewer than 3 distinct model sizes"));
}

}  // namespace
}  // namespace mt::ladder
