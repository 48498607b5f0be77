// sweep_carbs_test.cpp — the CARBS search on the scaling benchmark
// (sweep/benchmark.h), whose true front and learning-rate scaling are
// known: over 10 seeds at equal total cost its front lies closer to the
// true front than random search's and a grid's, and the learning-rate
// exponent fitted on its front is within 10% of the true one; failed runs
// are modelled and avoided; the same seed and observations suggest the same
// settings.
#include <gtest/gtest.h>

#include <cmath>

#include "sweep/benchmark.h"
#include "sweep/pareto.h"

namespace mt {
namespace {

constexpr double kBudget = 2e19;
constexpr double kGapLo = 1e16, kGapHi = 6e18;

TEST(SweepCarbs, FrontCloserThanRandomAndGridAndLrScalingRecovered) {
  const ScalingBenchmark b;
  double gap[3] = {0, 0, 0};
  int runs[3] = {0, 0, 0};
  std::vector<double> exps;
  const int seeds = 10;
  for (uint64_t seed = 1; seed <= uint64_t(seeds); ++seed) {
    for (SearchMethod m : {SearchMethod::kCarbs, SearchMethod::kRandom, SearchMethod::kGrid}) {
      const auto obs = run_benchmark_search(b, m, seed, kBudget);
      gap[int(m)] += front_gap(b, obs, kGapLo, kGapHi) / seeds;
      runs[int(m)] += int(obs.size());
      if (m == SearchMethod::kCarbs) exps.push_back(fitted_lr_exponent(obs, kGapLo, kGapHi));
    }
  }
  // A seed whose front has fewer than 3 runs in the range has no fit (NaN): counted, not averaged.
  double mean_exp = 0;
  int fitted = 0;
  for (double e : exps)
    if (std::isfinite(e)) mean_exp += e, ++fitted;
  mean_exp /= std::max(1, fitted);
  EXPECT_GE(fitted, 8);
  std::printf(
      "# front gap (mean over 10 seeds, loss above the true front): carbs %.4f (%d runs), random %.4f (%d), "
      "grid %.4f (%d); fitted lr exponent %.4f (true %.4f)\n",
      gap[0], runs[0] / seeds, gap[1], runs[1] / seeds, gap[2], runs[2] / seeds, mean_exp, b.lr_exponent());
  std::printf("# per seed:");
  for (double e : exps) std::printf(" %.4f", e);
  std::printf("\n");
  EXPECT_LT(gap[0], gap[1]);
  EXPECT_LT(gap[0], gap[2]);
  EXPECT_NEAR(mean_exp, b.lr_exponent(), 0.1 * std::fabs(b.lr_exponent()));
}

// Runs above a learning rate diverge (a failure, no value): after the first
// few, the search stops proposing them, and the search goes on.
TEST(SweepCarbs, FailedRunsAreModelledAndAvoided) {
  const ScalingBenchmark b;
  CarbsOptions opt;
  opt.seed = 3;
  opt.cost_of = [&b](const std::vector<double>& x) { return b.cost(x); };
  std::vector<SweepParam> space = b.space();
  space[0].center = 0.05;  // start at the edge of the divergence
  Carbs search(space, opt);
  int failed_early = 0, failed_late = 0;
  for (uint64_t i = 0; i < 40; ++i) {
    const std::vector<double> x = search.suggest(i);
    const bool diverged = x[0] > 0.06;
    (i < 20 ? failed_early : failed_late) += diverged;
    search.observe({x, diverged ? NAN : b.observe(x, 3, i), b.cost(x), diverged});
  }
  std::printf("# diverged suggestions: %d of the first 20, %d of the next 20\n", failed_early, failed_late);
  EXPECT_GT(failed_early, 0);
  EXPECT_LT(failed_late, failed_early);
  EXPECT_FALSE(search.front().empty());
}

// Counter-based: the same seed and observations give the same suggestion,
// whatever was suggested before; another seed another one.
TEST(SweepCarbs, SuggestionsAreAFunctionOfSeedObservationsAndIndex) {
  const ScalingBenchmark b;
  const auto obs = run_benchmark_search(b, SearchMethod::kRandom, 5, 3e18);
  ASSERT_GE(obs.size(), 10u);
  CarbsOptions opt;
  opt.seed = 11;
  Carbs a(b.space(), opt), c(b.space(), opt);
  for (const auto& o : obs) {
    a.observe(o);
    c.observe(o);
  }
  const std::vector<double> first = a.suggest(7);
  c.suggest(3);
  EXPECT_EQ(c.suggest(7), first);
  EXPECT_EQ(a.suggest(7), first);
  opt.seed = 12;
  Carbs other(b.space(), opt);
  for (const auto& o : obs) other.observe(o);
  EXPECT_NE(other.suggest(7), first);
}

// With focus costs (the costs a study compares at), the first runs and the
// targets take them in turn and every suggestion costs at most its focus
// cost: over 10 seeds, 12 runs then find better settings at those costs
// than 12 runs that spread over the whole front.
TEST(SweepCarbs, FocusCostsSpendTheRunsWhereTheStudyCompares) {
  const ScalingBenchmark b;
  const std::vector<double> focus = {3e16, 3e17, 3e18};
  double best[2][3] = {{0, 0, 0}, {0, 0, 0}};
  const int seeds = 10, runs = 12;
  for (uint64_t seed = 1; seed <= uint64_t(seeds); ++seed)
    for (int focused = 0; focused < 2; ++focused) {
      CarbsOptions opt;
      opt.seed = seed;
      opt.initial = 6;
      opt.cost_of = [&b](const std::vector<double>& x) { return b.cost(x); };
      if (focused) opt.focus_costs = focus;
      Carbs search(b.space(), opt);
      std::vector<double> at(3, INFINITY);
      for (int i = 0; i < runs; ++i) {
        const std::vector<double> x = search.suggest(uint64_t(i));
        const double cost = b.cost(x), value = b.observe(x, seed, uint64_t(i));
        if (focused) EXPECT_LE(cost, focus[size_t(i) % 3] * (1 + 1e-9)) << "run " << i << ", seed " << seed;
        search.observe({x, value, cost, false});
        for (int k = 0; k < 3; ++k)
          if (cost <= focus[size_t(k)]) at[size_t(k)] = std::min(at[size_t(k)], b.loss(x));
      }
      for (int k = 0; k < 3; ++k) best[focused][k] += at[size_t(k)] / seeds;
    }
  std::printf(
      "# best noise-free loss at 3e16 / 3e17 / 3e18 FLOPs, 12 runs, mean of 10 seeds: whole front %.4f %.4f "
      "%.4f, focused %.4f %.4f %.4f\n",
      best[0][0], best[0][1], best[0][2], best[1][0], best[1][1], best[1][2]);
  for (int k = 0; k < 3; ++k) EXPECT_LT(best[1][k], best[0][k]) << "focus cost " << focus[size_t(k)];
}

TEST(SweepPareto, FrontAndCurve) {
  const std::vector<CostValue> pts = {{4, 1.0}, {1, 3.0}, {2, 2.5}, {2, 2.0}, {8, 1.2}, {16, 0.5}, {3, 2.2}};
  EXPECT_EQ(pareto_front(pts), (std::vector<size_t>{1, 3, 0, 5}));
  const FrontCurve curve({{1, 3.0}, {2, 2.0}, {4, 1.0}, {16, 0.5}});
  EXPECT_DOUBLE_EQ(curve.at(2), 2.0);
  EXPECT_NEAR(curve.at(std::sqrt(2.0)), 2.5, 1e-12);      // halfway in log cost
  EXPECT_NEAR(curve.at(0.5), 4.0, 1e-12);                 // the first segment continued
  EXPECT_NEAR(curve.at(64), 0.0, 1e-12);                  // the last one continued
  EXPECT_DOUBLE_EQ(FrontCurve({{3, 1.5}}).at(100), 1.5);  // one point: flat
  EXPECT_EQ(best_within(pts, 0.5), INFINITY);
  EXPECT_DOUBLE_EQ(best_within(pts, 3), 2.0);
  EXPECT_DOUBLE_EQ(expected_improvement(1.0, 1.0, 0.0), 0.0);
  EXPECT_NEAR(expected_improvement(1.0, 1.0, 1.0), 1.0 / std::sqrt(2.0 * M_PI), 1e-12);
  EXPECT_NEAR(expected_improvement(3.0, 1.0, 1e-9), 2.0, 1e-9);
}

}  // namespace
}  // namespace mt
