// mix_regressor_test.cpp — the log-linear law recovers a known law from
// noiseless data (up to the shift of t along 1 that weights summing to 1
// cannot see), XGBoost learns a nonlinear function well enough to rank
// held-out mixtures and gives the same bits twice, rank correlations match
// hand-computed values, and TargetModel combines targets by their weights.
// With fewer runs than weights the log-linear fit stops at an exact fit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "mix/dirichlet.h"
#include "mix/loglinear.h"
#include "mix/rank.h"
#include "mix/target_model.h"
#include "mix/xgboost_regressor.h"

namespace mt::mix {
namespace {

std::vector<std::vector<double>> mixtures(int64_t m, int64_t n, uint64_t seed, int64_t first = 0) {
  return sample_mixtures(std::vector<double>(size_t(m), 1.0 / double(m)), std::vector<double>(size_t(m), 1.0), n, 1.0,
                         seed, first);
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

TEST(MixRank, HandComputedValues) {
  // Ranks of a: (1, 2.5, 2.5, 4); Pearson with (1, 3, 2, 4) is 4.5 / sqrt(4.5 * 5)
  // (scipy.stats.spearmanr: 0.9486832980505138).
  EXPECT_NEAR(spearman({1, 2, 2, 3}, {1, 3, 2, 4}), 0.9486832980505138, 1e-15);
  EXPECT_EQ(average_ranks({10, 30, 20, 20}), (std::vector<double>{1, 4, 2.5, 2.5}));
  EXPECT_NEAR(spearman({1, 2, 3, 4}, {10, 100, 1000, 1e4}), 1.0, 1e-15);  // monotone, not linear
  EXPECT_LT(pearson({1, 2, 3, 4}, {10, 100, 1000, 1e4}), 0.9);
  EXPECT_NEAR(spearman({1, 2, 3}, {3, 2, 1}), -1.0, 1e-15);
  EXPECT_NEAR(pearson({1, 2, 3, 4}, {2, 4, 5, 9}), 11 / std::sqrt(130.0), 1e-15);  // 11 / sqrt(5 * 26)
  EXPECT_TRUE(std::isnan(spearman({1}, {2})));
  EXPECT_TRUE(std::isnan(spearman({1, 1, 1}, {1, 2, 3})));
  EXPECT_TRUE(std::isnan(pearson({1, 2, 3}, {5, 5, 5})));
}

TEST(MixLogLinear, RecoversAKnownLawFromNoiselessData) {
  const std::vector<double> t = {1.0, -0.5, 0.3, -1.2, 0.4};
  const double c = 2.0, b = 0.2;
  const auto X = mixtures(5, 60, 1);
  std::vector<double> y;
  for (const auto& x : X) y.push_back(c + std::exp(b + dot(t, x)));
  LogLinearOptions opt;
  opt.ridge = 0;  // noiseless: nothing to regularise, and the ridge would bias t
  LogLinearRegressor f(opt);
  ASSERT_TRUE(f.fit(X, y).is_ok());
  EXPECT_NEAR(f.c(), c, 1e-4);
  // Only differences of t and b + t_0 are identified (weights sum to 1).
  for (size_t i = 1; i < t.size(); ++i) EXPECT_NEAR(f.t()[i] - f.t()[0], t[i] - t[0], 1e-4) << i;
  EXPECT_NEAR(f.b() + f.t()[0], b + t[0], 1e-4);
  for (const auto& x : mixtures(5, 20, 1, 1000)) EXPECT_NEAR(f.predict(x), c + std::exp(b + dot(t, x)), 1e-6);
  // gradient() is d predict / d x.
  const std::vector<double> x = mixtures(5, 1, 2)[0];
  const std::vector<double> g = f.gradient(x);
  for (size_t i = 0; i < x.size(); ++i) {
    std::vector<double> hi = x, lo = x;
    hi[i] += 1e-6;
    lo[i] -= 1e-6;
    EXPECT_NEAR(g[i], (f.predict(hi) - f.predict(lo)) / 2e-6, 1e-6 * (1 + std::fabs(g[i])));
  }
  // The default (small) ridge predicts nearly as well.
  LogLinearRegressor r;
  ASSERT_TRUE(r.fit(X, y).is_ok());
  for (const auto& xh : mixtures(5, 20, 1, 1000)) EXPECT_NEAR(r.predict(xh), c + std::exp(b + dot(t, xh)), 2e-3);
}

TEST(MixLogLinear, RejectsBadData) {
  LogLinearRegressor f;
  EXPECT_FALSE(f.fit({{0.5, 0.5}}, {1.0}).is_ok());                          // one run
  EXPECT_FALSE(f.fit({{0.5, 0.5}, {0.2, 0.8}}, {1.0}).is_ok());              // sizes
  EXPECT_FALSE(f.fit({{0.5, 0.5}, {0.2}}, {1.0, 2.0}).is_ok());              // ragged
  EXPECT_FALSE(f.fit({{0.5, 0.5}, {0.2, 0.8}}, {1.0, NAN}).is_ok());          // non-finite loss
  const Status s = f.fit({{0.5, NAN}, {0.2, 0.8}}, {1.0, 2.0});
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("run 0"), std::string::npos) << s.message();
  // Equal losses are a valid (constant) fit.
  ASSERT_TRUE(f.fit({{0.5, 0.5}, {0.2, 0.8}, {0.9, 0.1}}, {3.0, 3.0, 3.0}).is_ok());
  EXPECT_NEAR(f.predict({0.3, 0.7}), 3.0, 1e-6);
}

// Four runs of forty weights: the law fits them exactly only in a limit, so
// the fit stops at the exact-fit objective instead of running every start to
// the iteration limit (liblbfgs's code says it stopped, not that it ran out).
TEST(MixLogLinear, FewerRunsThanWeightsStopAtAnExactFit) {
  const auto X = mixtures(40, 4, 3);
  std::vector<double> y;
  for (const auto& x : X) y.push_back(3.0 + std::exp(2 * x[0] - x[1]));
  LogLinearRegressor f;
  ASSERT_TRUE(f.fit(X, y).is_ok());
  EXPECT_TRUE(f.reached_exact_fit()) << lbfgs_code_text(f.lbfgs_code());
  EXPECT_LE(f.objective(), LogLinearOptions{}.exact_fit_per_run * 4);
  double sd = 0, mean = (y[0] + y[1] + y[2] + y[3]) / 4;
  for (double v : y) sd += (v - mean) * (v - mean);
  sd = std::sqrt(sd / 4);
  for (size_t k = 0; k < X.size(); ++k) EXPECT_NEAR(f.predict(X[k]), y[k], 2e-3 * sd) << k;
}

// A nonlinear function of 10 weights: a bump, a product and a threshold.
double bumpy(const std::vector<double>& x) {
  return 3 + std::sin(8 * x[0]) + 20 * (x[1] - 0.1) * (x[1] - 0.1) + 15 * x[2] * x[3] + (x[4] > 0.15 ? 0.3 : 0.0);
}

TEST(MixXGBoost, RanksHeldOutMixturesOfANonlinearFunction) {
  const auto X = mixtures(10, 300, 5), Xh = mixtures(10, 200, 5, 100000);
  std::vector<double> y, yh;
  for (const auto& x : X) y.push_back(bumpy(x));
  for (const auto& x : Xh) yh.push_back(bumpy(x));
  XGBoostRegressor f;
  ASSERT_TRUE(f.fit(X, y).is_ok()) << f.fit(X, y).message();
  const std::vector<double> p = f.predict_batch(Xh);
  const double rho = spearman(p, yh);
  std::printf("xgboost held-out spearman %.4f (xgboost %s)\n", rho, xgboost_version().c_str());
  EXPECT_GT(rho, 0.85);
  EXPECT_EQ(p[3], f.predict(Xh[3]));  // one row and a batch agree
  // A second fit of the same data gives the same bits.
  XGBoostRegressor g;
  ASSERT_TRUE(g.fit(X, y).is_ok());
  const std::vector<double> q = g.predict_batch(Xh);
  EXPECT_EQ(0, std::memcmp(p.data(), q.data(), p.size() * sizeof(double)));
  // Movable: the booster travels with the object.
  XGBoostRegressor moved = std::move(g);
  EXPECT_EQ(moved.predict(Xh[0]), p[0]);
  EXPECT_FALSE(f.fit({{0.5, 0.5}, {0.5}}, {1, 2}).is_ok());
}

TEST(MixTargetModel, CombinesTargetsByTheirWeights) {
  const auto X = mixtures(4, 40, 8);
  const std::vector<std::vector<double>> t = {{1, -1, 0.5, 0}, {-0.5, 0.2, 0.8, -1}};
  std::vector<std::vector<double>> Y;
  for (const auto& x : X) Y.push_back({2 + std::exp(dot(t[0], x)), 1.5 + std::exp(0.3 + dot(t[1], x))});
  TargetModel model;
  ASSERT_TRUE(model.fit(RegressorKind::kLogLinear, X, Y, {0.25, 0.75}, 1).is_ok());
  EXPECT_EQ(model.targets(), 2);
  const auto Xh = mixtures(4, 10, 8, 500);
  const std::vector<double> batch = model.predict_batch(Xh);
  for (size_t k = 0; k < Xh.size(); ++k) {
    const std::vector<double> each = model.predict_each(Xh[k]);
    EXPECT_NEAR(each[0], 2 + std::exp(dot(t[0], Xh[k])), 1e-3);
    EXPECT_NEAR(each[1], 1.5 + std::exp(0.3 + dot(t[1], Xh[k])), 1e-3);
    EXPECT_DOUBLE_EQ(model.predict(Xh[k]), 0.25 * each[0] + 0.75 * each[1]);
    EXPECT_DOUBLE_EQ(batch[k], model.predict(Xh[k]));
  }
  const std::vector<double> g = model.gradient(Xh[0]);
  for (size_t i = 0; i < 4; ++i) {
    std::vector<double> hi = Xh[0], lo = Xh[0];
    hi[i] += 1e-6;
    lo[i] -= 1e-6;
    EXPECT_NEAR(g[i], (model.predict(hi) - model.predict(lo)) / 2e-6, 1e-6 * (1 + std::fabs(g[i])));
  }
  EXPECT_FALSE(model.fit(RegressorKind::kLogLinear, X, Y, {-1, 1}, 1).is_ok());
  EXPECT_FALSE(model.fit(RegressorKind::kLogLinear, X, Y, {0, 0}, 1).is_ok());
  EXPECT_FALSE(model.fit(RegressorKind::kLogLinear, X, Y, {1}, 1).is_ok());
  TargetModel xgb;
  std::vector<double> y0;
  for (const auto& row : Y) y0.push_back(row[0]);
  ASSERT_TRUE(xgb.fit_scalar(RegressorKind::kXGBoost, X, y0, 3).is_ok());
  EXPECT_EQ(xgb.regressor(0).name(), "xgboost");
  EXPECT_EQ(make_regressor(RegressorKind::kLogLinear, 0)->name(), "loglinear");
  EXPECT_EQ(parse_regressor_kind("xgboost").value(), RegressorKind::kXGBoost);
  EXPECT_FALSE(parse_regressor_kind("lightgbm").is_ok());
}

}  // namespace
}  // namespace mt::mix
