// sweep_power_law_test.cpp — the power law a sweep fits to each setting
// along its front: exact on an exact law, its bootstrap interval holding
// the true exponent under noise, nothing from fewer than three runs or one
// cost; the loss it predicts beyond the runs.
#include <gtest/gtest.h>

#include <cmath>

#include "sweep/carbs.h"
#include "sweep/power_law.h"

namespace mt {
namespace {

TEST(SweepPowerLaw, ExactLawRecoveredAndIntervalHoldsTheTruthUnderNoise) {
  std::vector<double> cost, value, noisy;
  for (int i = 0; i < 12; ++i) {
    const double c = 1e15 * std::pow(10.0, i * 0.3);
    cost.push_back(c);
    value.push_back(0.02 * std::pow(c / 1e15, -0.13));
    noisy.push_back(value.back() * std::exp(0.05 * philox_normal(4, 1, uint64_t(i))));
  }
  const PowerLawFit exact = fit_power_law(cost, value);
  EXPECT_NEAR(exact.b, -0.13, 1e-12);
  EXPECT_NEAR(exact.a * std::pow(1e15, exact.b), 0.02, 1e-12);
  EXPECT_NEAR(exact.r2, 1.0, 1e-12);
  const PowerLawFit f = fit_power_law(cost, noisy, 400, 7);
  std::printf("# noisy: exponent %.4f, 90%% interval [%.4f, %.4f] (true -0.13)\n", f.b, f.b_lo, f.b_hi);
  EXPECT_LT(f.b_lo, -0.13);
  EXPECT_GT(f.b_hi, -0.13);
  EXPECT_LT(f.b_hi - f.b_lo, 0.1);
  EXPECT_EQ(fit_power_law(cost, noisy, 400, 7).b_lo, f.b_lo);  // counter-based: the same draws
  EXPECT_TRUE(std::isnan(fit_power_law({1e15, 1e16}, {1, 2}).b));
  EXPECT_TRUE(std::isnan(fit_power_law({1e15, 1e15, 1e15}, {1, 2, 3}).b));
}

// The loss a front predicts for a cost beyond it: the law's value there,
// its interval from the same resamples, exact (a zero-width interval) on an
// exact law and holding the true value under noise, wider the farther out.
TEST(SweepPowerLaw, PredictionBeyondTheRunsHoldsTheTrueValue) {
  std::vector<double> cost, value, noisy;
  for (int i = 0; i < 10; ++i) {
    const double c = 1e10 * std::pow(10.0, i * 0.2);
    cost.push_back(c);
    value.push_back(30.0 * std::pow(c, -0.05));
    noisy.push_back(value.back() * std::exp(0.01 * philox_normal(5, 1, uint64_t(i))));
  }
  const std::vector<double> at = {1e12, 1e13, 1e15};
  const auto exact = predict_power_law(cost, value, at, 100, 3);
  ASSERT_EQ(exact.size(), 3u);
  for (const PowerLawPrediction& p : exact) {
    const double truth = 30.0 * std::pow(p.cost, -0.05);
    EXPECT_NEAR(p.value, truth, 1e-9 * truth);
    EXPECT_NEAR(p.lo, truth, 1e-9 * truth);
    EXPECT_NEAR(p.hi, truth, 1e-9 * truth);
  }
  const auto pred = predict_power_law(cost, noisy, at, 400, 3);
  for (const PowerLawPrediction& p : pred) {
    const double truth = 30.0 * std::pow(p.cost, -0.05);
    std::printf("# at %.0e: predicted %.4f [%.4f, %.4f], true %.4f\n", p.cost, p.value, p.lo, p.hi, truth);
    EXPECT_LT(p.lo, truth);
    EXPECT_GT(p.hi, truth);
  }
  EXPECT_GT(pred[2].hi - pred[2].lo, pred[1].hi - pred[1].lo);  // farther out, less known
  EXPECT_TRUE(std::isnan(predict_power_law({1e15, 1e16}, {1, 2}, {1e17}, 100, 3)[0].value));
}

}  // namespace
}  // namespace mt
