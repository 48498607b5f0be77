// ladder_projection_test.cpp — projections (src/ladder/projection.h and the
// projection part of analysis.h): the compute-optimal split is the minimum of
// the isoFLOP curve and spends exactly C; the published replication's law
// gives ~18 tokens per parameter at Chinchilla's budget; the sparsity term
// only rescales A; a projected run carries bootstrap intervals; targets that
// do not match the options are refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "ladder/analysis.h"
#include "support/ladder_synthetic.h"

namespace mt::ladder {
namespace {

using ::testing::HasSubstr;

TEST(LadderProjection, ComputeOptimalIsTheIsoflopMinimum) {
  const Law law = testing::known_law();
  for (double C : {1e19, 1e22, 3e25}) {
    const Allocation a = compute_optimal(law, C);
    EXPECT_NEAR(6 * a.N * a.D / C, 1.0, 1e-12);
    EXPECT_NEAR(a.loss, law_loss(law, a.N, a.D), 1e-12);
    double best_n = 0, best_l = INFINITY;
    for (double N : testing::logspace(a.N / 10, a.N * 10, 4001)) {
      const double l = law_loss(law, N, C / (6 * N));
      if (l < best_l) {
        best_l = l;
        best_n = N;
      }
    }
    EXPECT_NEAR(std::log(best_n), std::log(a.N), 2e-3) << C;
    EXPECT_LE(a.loss, best_l + 1e-12) << C;
  }
}

TEST(LadderProjection, PublishedReplicationGivesAbout18TokensPerParameter) {
  Law besiroglu;  // Besiroglu et al. (2024), Table 1
  besiroglu.E = 1.8172;
  besiroglu.A = 482.01;
  besiroglu.B = 2085.43;
  besiroglu.alpha = 0.3478;
  besiroglu.beta = 0.3658;
  EXPECT_NEAR(compute_optimal(besiroglu, 5.76e23).tokens_per_param(), 18.0, 1.0);
}

TEST(LadderProjection, TokensPerParameterSplitsTheBudget) {
  const Allocation a = at_tokens_per_param(testing::known_law(), 1e23, 200);
  EXPECT_NEAR(a.tokens_per_param(), 200, 1e-9);
  EXPECT_NEAR(6 * a.N * a.D / 1e23, 1.0, 1e-12);
  // Over-training costs loss at equal compute.
  EXPECT_GT(a.loss, compute_optimal(testing::known_law(), 1e23).loss);
}

TEST(LadderProjection, SparsityTermRescalesA) {
  Law sparse = testing::known_law();
  sparse.sparsity = Sparsity::kTotalOverActive;
  sparse.gamma = 0.3;
  Law dense = testing::known_law();
  dense.A = sparse.A / std::pow(8.0, 0.3);
  const Allocation s = compute_optimal(sparse, 1e22, 8.0), d = compute_optimal(dense, 1e22);
  EXPECT_NEAR(s.N / d.N, 1.0, 1e-12);
  EXPECT_NEAR(s.loss, d.loss, 1e-12);
  EXPECT_LT(s.loss, compute_optimal(sparse, 1e22, 1.0).loss);  // gamma > 0: sparser is better at equal compute
}

TEST(LadderProjection, NoInteriorOptimumIsNaN) {
  Law flat = testing::known_law();
  flat.alpha = -0.1;
  EXPECT_TRUE(std::isnan(compute_optimal(flat, 1e22).N));
}

TEST(LadderProjection, ProjectedRunsCarryIntervals) {
  const Law truth = testing::known_law();
  const std::vector<ladder::Run> runs =
      testing::grid_runs(truth, testing::logspace(1e7, 1e10, 6), testing::logspace(1e9, 1e12, 6), 0.01, 8);
  LadderOptions opt;
  opt.fit.grid_a = {0, 5, 10};
  opt.fit.grid_b = {0, 5, 10};
  opt.bootstrap = {60, 3, 0.9};
  opt.target = {1e11, 2e12, 1e23, 100, 0};
  // A target size and a target compute are alternatives in the CLI; the library takes both.
  auto a = analyze(runs, opt);
  ASSERT_TRUE(a) << a.status().message();
  const Projection& p = a->projection;
  ASSERT_TRUE(p.at_size && p.compute_optimal && p.at_ratio);
  EXPECT_EQ(p.at_size->loss.value, law_loss(a->fit.law, 1e11, 2e12));
  EXPECT_EQ(p.at_size->N.value, 1e11);
  EXPECT_EQ(p.at_size->N.lo, p.at_size->N.hi);  // a given size has no spread
  EXPECT_NEAR(p.at_ratio->tokens_per_param.value, 100, 1e-9);
  for (const ProjectedRun* r : {&*p.at_size, &*p.compute_optimal, &*p.at_ratio}) {
    EXPECT_EQ(r->loss.resamples, 60);
    EXPECT_GT(r->loss.se, 0);
    EXPECT_LT(r->loss.lo, r->loss.hi);
    EXPECT_LE(r->loss.lo, r->loss.value + 1e-3);
    EXPECT_GE(r->loss.hi, r->loss.value - 1e-3);
  }
  // Close to the truth's compute-optimal split, three decades of compute past the largest run.
  const Allocation opt_true = compute_optimal(truth, 1e23);
  EXPECT_NEAR(p.compute_optimal->loss.value, opt_true.loss, 0.05);
  EXPECT_NEAR(std::log(p.compute_optimal->N.value), std::log(opt_true.N), 0.7);
  EXPECT_FALSE(p.isoflop_N.has_value());  // no budget labels: no approach-2 figure
}

TEST(LadderProjection, TargetsMustMatchTheOptions) {
  const std::vector<ladder::Run> runs = testing::grid_runs(testing::known_law(), testing::logspace(1e7, 1e10, 3),
                                                           testing::logspace(1e9, 1e12, 3), 0, 1, {1.0, 8.0});
  LadderOptions opt;
  opt.sparsity = Sparsity::kTotalOverActive;
  opt.target.flops = 1e22;
  auto a = analyze(runs, opt);
  ASSERT_FALSE(a);
  EXPECT_THAT(a.status().message(), HasSubstr("needs the target's G"));
  LadderOptions dense;
  dense.target.flops = 1e22;
  dense.target.sparsity = 4;
  auto b = analyze(runs, dense);
  ASSERT_FALSE(b);
  EXPECT_THAT(b.status().message(), HasSubstr("only to a law fitted with the sparsity term"));
  LadderOptions half;
  half.target.params = 1e9;
  auto c = analyze(runs, half);
  ASSERT_FALSE(c);
  EXPECT_THAT(c.status().message(), HasSubstr("both parameters and tokens"));
  LadderOptions drop_all;
  drop_all.drop_highest_loss = int64_t(runs.size());
  auto d = analyze(runs, drop_all);
  ASSERT_FALSE(d);
  EXPECT_THAT(d.status().message(), HasSubstr("leaves none"));
}

TEST(LadderProjection, DropsTheHighestLossRuns) {
  std::vector<ladder::Run> runs =
      testing::grid_runs(testing::known_law(), testing::logspace(1e7, 1e10, 4), testing::logspace(1e9, 1e12, 4), 0, 1);
  runs[5].loss = 9;
  runs[9].loss = 8;
  LadderOptions opt;
  opt.fit.grid_a = {5};
  opt.fit.grid_b = {5};
  opt.drop_highest_loss = 2;
  auto a = analyze(runs, opt);
  ASSERT_TRUE(a) << a.status().message();
  ASSERT_EQ(a->dropped.size(), 2u);
  EXPECT_EQ(a->dropped[0].name, "run5");  // file order
  EXPECT_EQ(a->dropped[1].name, "run9");
  EXPECT_EQ(a->used.size(), 14u);
  EXPECT_NEAR(a->fit.law.alpha, testing::known_law().alpha, 0.01);
}

}  // namespace
}  // namespace mt::ladder
