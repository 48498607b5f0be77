// sweep_gp_test.cpp — the sweep's Gaussian process: the gradient of its log
// posterior against central differences in every hyperparameter; a fit to a
// smooth function predicts held-out points well with small variance near
// the data and the prior's variance far from it; noisy targets are not
// interpolated (the fitted noise is near the true one).
#include <gtest/gtest.h>

#include <cmath>

#include "sweep/carbs.h"
#include "sweep/gp.h"

namespace mt {
namespace {

std::vector<std::vector<double>> points(int n, int d, uint64_t seed) {
  std::vector<std::vector<double>> X(static_cast<size_t>(n), std::vector<double>(static_cast<size_t>(d)));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < d; ++j) X[size_t(i)][size_t(j)] = philox_uniform(seed, 1, uint64_t(i * d + j));
  return X;
}

double smooth(const std::vector<double>& x) { return std::sin(3.0 * x[0]) + 0.5 * (x[1] - 0.3) * (x[1] - 0.3); }

TEST(SweepGp, LogPosteriorGradientMatchesCentralDifferences) {
  const auto X = points(12, 3, 4);
  std::vector<double> y;
  for (const auto& x : X) y.push_back(smooth(x) + 0.1 * philox_normal(5, 2, y.size()));
  const GpOptions opt;
  for (const std::vector<double>& theta :
       {std::vector<double>{-0.5, 0.3, 1.0, 0.2, -3.0}, std::vector<double>{0.4, -1.0, 0.0, -0.5, -1.5}}) {
    std::vector<double> g;
    gp_log_posterior(X, y, theta, opt, &g);
    for (size_t j = 0; j < theta.size(); ++j) {
      const double h = 1e-5;
      std::vector<double> a = theta, b = theta;
      a[j] += h;
      b[j] -= h;
      const double fd = (gp_log_posterior(X, y, a, opt, nullptr) - gp_log_posterior(X, y, b, opt, nullptr)) / (2 * h);
      EXPECT_NEAR(g[j], fd, 1e-5 * std::max(1.0, std::fabs(fd))) << "theta " << j;
    }
  }
}

TEST(SweepGp, FitPredictsASmoothFunction) {
  const auto X = points(40, 2, 7);
  std::vector<double> y;
  for (const auto& x : X) y.push_back(smooth(x));
  const GaussianProcess gp = GaussianProcess::fit(X, y);
  double worst = 0;
  for (const auto& x : points(50, 2, 99)) {
    const GpPrediction p = gp.predict(x);
    worst = std::max(worst, std::fabs(p.mean - smooth(x)));
    EXPECT_LT(p.var, 0.01);
  }
  EXPECT_LT(worst, 0.05);
  // Far from every point the prediction falls back to the mean with the prior's variance.
  const GpPrediction far = gp.predict({40.0, -40.0});
  double mean = 0, var = 0;
  for (double v : y) mean += v / double(y.size());
  for (double v : y) var += (v - mean) * (v - mean) / double(y.size());
  EXPECT_NEAR(far.mean, mean, 1e-6);
  EXPECT_GT(far.var, 0.3 * var);
}

TEST(SweepGp, NoisyTargetsAreSmoothedNotInterpolated) {
  const auto X = points(60, 1, 3);
  std::vector<double> y;
  const double sd = 0.2;
  for (const auto& x : X) y.push_back(std::sin(4.0 * x[0]) + sd * philox_normal(8, 3, y.size()));
  const GaussianProcess gp = GaussianProcess::fit(X, y);
  EXPECT_GT(gp.noise_var(), 0.25 * sd * sd);
  EXPECT_LT(gp.noise_var(), 4.0 * sd * sd);
  double worst = 0;
  for (double x = 0.05; x < 0.95; x += 0.05)
    worst = std::max(worst, std::fabs(gp.predict({x}).mean - std::sin(4.0 * x)));
  EXPECT_LT(worst, 2.0 * sd);
}

}  // namespace
}  // namespace mt
