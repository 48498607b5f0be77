// ladder_bootstrap_test.cpp — resampling (src/ladder/bootstrap.h) is a pure
// function of (seed, resample) and uniform; summaries match numpy's
// conventions; and the bootstrap standard errors of a law fit shrink with
// more runs, at roughly the 1/sqrt(n) rate, while covering the true values.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "ladder/analysis.h"
#include "support/ladder_synthetic.h"

namespace mt::ladder {
namespace {

TEST(LadderBootstrap, ResamplesArePureFunctionsOfSeedAndIndex) {
  const std::vector<int64_t> a = resample_indices(1000, 7, 3);
  EXPECT_EQ(a, resample_indices(1000, 7, 3));
  EXPECT_NE(a, resample_indices(1000, 7, 4));
  EXPECT_NE(a, resample_indices(1000, 8, 3));
  // Uniform over rows: each of 10 deciles gets ~10% of 100k draws.
  const std::vector<int64_t> big = resample_indices(100000, 1, 0);
  std::vector<int64_t> bins(10, 0);
  for (int64_t i : big) {
    ASSERT_GE(i, 0);
    ASSERT_LT(i, 100000);
    ++bins[size_t(i / 10000)];
  }
  for (int64_t c : bins) EXPECT_NEAR(double(c), 10000.0, 400.0);
  // With replacement: about 1 - 1/e of the rows appear.
  std::vector<bool> seen(100000, false);
  for (int64_t i : big) seen[size_t(i)] = true;
  EXPECT_NEAR(double(std::count(seen.begin(), seen.end(), true)) / 1e5, 1 - std::exp(-1.0), 0.01);
}

TEST(LadderBootstrap, EveryResampleRunsOnceWhateverTheThreads) {
  BootstrapOptions opt{64, 5, 0.95};
  std::vector<int64_t> first(64, -1);
  for_each_resample(10, opt, [&](int64_t b, const std::vector<int64_t>& idx) { first[size_t(b)] = idx[0]; });
  for (int64_t b = 0; b < 64; ++b) EXPECT_EQ(first[size_t(b)], resample_indices(10, 5, b)[0]) << b;
}

TEST(LadderBootstrap, SummaryMatchesNumpyConventions) {
  // numpy: std(ddof=1) of 1..5 = 1.5811; percentile(2.5, 97.5) = 1.1, 4.9.
  const Estimate e = summarize(3.0, {5, 1, NAN, 4, 2, 3, INFINITY}, 0.95);
  EXPECT_EQ(e.value, 3.0);
  EXPECT_EQ(e.resamples, 5);
  EXPECT_NEAR(e.se, 1.5811388, 1e-6);
  EXPECT_NEAR(e.lo, 1.1, 1e-12);
  EXPECT_NEAR(e.hi, 4.9, 1e-12);
  const Estimate none = summarize(2.0, {}, 0.95);
  EXPECT_TRUE(std::isnan(none.se));
  EXPECT_EQ(none.resamples, 0);
}

// Standard errors of (alpha, beta, E) from a ladder of `per_axis`^2 runs.
LawEstimates bootstrap_se(int per_axis) {
  const std::vector<Run> runs = testing::grid_runs(testing::known_law(), testing::logspace(1e7, 1e10, per_axis),
                                                   testing::logspace(1e9, 1e12, per_axis), 0.01, 21);
  LadderOptions opt;
  opt.fit.grid_a = {0, 5, 10};  // the known law starts near a = 6, b = 7; speed over grid coverage here
  opt.fit.grid_b = {0, 5, 10};
  opt.bootstrap = {100, 1, 0.95};
  auto a = analyze(runs, opt);
  EXPECT_TRUE(a) << a.status().message();
  return a ? a->estimates : LawEstimates{};
}

TEST(LadderBootstrap, StandardErrorsShrinkWithMoreRuns) {
  const LawEstimates small = bootstrap_se(4), large = bootstrap_se(12);  // 16 vs 144 runs
  for (auto [name, s, l] : {std::tuple{"alpha", small.alpha, large.alpha}, std::tuple{"beta", small.beta, large.beta},
                            std::tuple{"E", small.E, large.E}}) {
    EXPECT_EQ(s.resamples, 100) << name;
    EXPECT_GT(l.se, 0) << name;
    // 9x the runs: 1/3 of the error in expectation; allow for the bootstrap's own noise.
    EXPECT_LT(l.se, 0.6 * s.se) << name << ": " << l.se << " vs " << s.se;
    EXPECT_GT(l.se, 0.1 * s.se) << name << ": " << l.se << " vs " << s.se;
  }
  const Law truth = testing::known_law();
  EXPECT_LE(large.alpha.lo, truth.alpha);
  EXPECT_GE(large.alpha.hi, truth.alpha);
  EXPECT_LE(large.beta.lo, truth.beta);
  EXPECT_GE(large.beta.hi, truth.beta);
}

}  // namespace
}  // namespace mt::ladder
