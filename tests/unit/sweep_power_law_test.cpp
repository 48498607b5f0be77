// sweep_power_law_test.cpp — the power law a sweep fits to each setting
// along its front: exact on an exact law, its bootstrap interval holding
// the true exponent under noise, nothing from fewer than three runs or one
// cost.
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

}  // namespace
}  // namespace mt
