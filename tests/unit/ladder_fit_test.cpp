// ladder_fit_test.cpp — the law fit (src/ladder/fit_law.h) recovers known
// parameters from synthetic ladders, with and without the MoE sparsity term;
// it does at least as well as the true parameters on the objective; it gives
// the same answer for any thread count; data that cannot identify the law
// are refused with a message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>

#include "ladder/fit_law.h"
#include "ladder/objective.h"
#include "support/ladder_synthetic.h"

namespace mt::ladder {
namespace {

using testing::grid_runs;
using ::testing::HasSubstr;
using testing::known_law;
using testing::logspace;

FitPoints dense_points(const std::vector<ladder::Run>& runs) {
  return *make_fit_points(runs, ParamCount::kActive, Sparsity::kNone);
}

TEST(LadderFit, RecoversAKnownLawWithoutNoise) {
  const Law truth = known_law();
  const FitPoints p = dense_points(grid_runs(truth, logspace(1e7, 1e10, 6), logspace(1e9, 1e12, 6), 0, 1));
  auto fit = fit_law(p, FitOptions{});
  ASSERT_TRUE(fit) << fit.status().message();
  const Law& l = fit->law;
  EXPECT_NEAR(l.alpha, truth.alpha, 2e-3);
  EXPECT_NEAR(l.beta, truth.beta, 2e-3);
  EXPECT_NEAR(l.E, truth.E, 5e-3);
  EXPECT_NEAR(std::log(l.A), std::log(truth.A), 0.02);
  EXPECT_NEAR(std::log(l.B), std::log(truth.B), 0.02);
  EXPECT_EQ(fit->starts, 4500);
  EXPECT_EQ(fit->points, 36);
  EXPECT_EQ(fit->optima.front().alpha, l.alpha);
}

TEST(LadderFit, RecoversAKnownLawFromNoisyRuns) {
  const Law truth = known_law();
  const FitPoints p = dense_points(grid_runs(truth, logspace(1e7, 1e10, 7), logspace(1e9, 1e12, 7), 0.005, 2));
  auto fit = fit_law(p, FitOptions{});
  ASSERT_TRUE(fit) << fit.status().message();
  EXPECT_NEAR(fit->law.alpha, truth.alpha, 0.02);
  EXPECT_NEAR(fit->law.beta, truth.beta, 0.02);
  EXPECT_NEAR(fit->law.E, truth.E, 0.05);
  // The optimiser did its job: nothing worse than the law that made the data.
  std::vector<double> x(kLawParams);
  law_to_x(truth, x.data());
  EXPECT_LE(fit->objective, law_objective(p, x.data(), 1e-3, nullptr) * (1 + 1e-9));
}

TEST(LadderFit, RecoversTheSparsityTerm) {
  Law truth = known_law();
  truth.sparsity = Sparsity::kTotalOverActive;
  truth.gamma = 0.25;
  const std::vector<ladder::Run> runs =
      grid_runs(truth, logspace(1e7, 1e10, 4), logspace(1e9, 1e12, 4), 0.002, 3, {1.0, 4.0, 16.0, 64.0});
  auto p = make_fit_points(runs, ParamCount::kActive, Sparsity::kTotalOverActive);
  ASSERT_TRUE(p) << p.status().message();
  FitOptions opt;
  opt.grid_a = {0, 5, 10};  // 3 x 3 x 5 x 5 x 5 x 3 starts: the sparse grid is 3x the dense one
  opt.grid_b = {0, 5, 10};
  auto fit = fit_law(*p, opt);
  ASSERT_TRUE(fit) << fit.status().message();
  EXPECT_NEAR(fit->law.gamma, truth.gamma, 0.02);
  EXPECT_NEAR(fit->law.alpha, truth.alpha, 0.02);
  EXPECT_NEAR(fit->law.beta, truth.beta, 0.02);
  EXPECT_NEAR(fit->law.E, truth.E, 0.05);
  EXPECT_EQ(fit->law.sparsity, Sparsity::kTotalOverActive);

  // n_experts as G: the same data read through n_experts = G.
  std::vector<ladder::Run> with_experts = runs;
  for (ladder::Run& r : with_experts) r.n_experts = r.total_params / r.active_params;
  auto pe = make_fit_points(with_experts, ParamCount::kActive, Sparsity::kExperts);
  ASSERT_TRUE(pe) << pe.status().message();
  EXPECT_EQ(pe->log_g, p->log_g);
}

TEST(LadderFit, SameAnswerForAnyThreadCount) {
  const FitPoints p = dense_points(grid_runs(known_law(), logspace(1e7, 1e10, 5), logspace(1e9, 1e12, 5), 0.01, 4));
  FitOptions opt;
  opt.grid_a = {0, 10, 20};
  opt.grid_b = {0, 10, 20};
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  auto one = fit_law(p, opt);
  omp_set_num_threads(3);
  auto three = fit_law(p, opt);
  omp_set_num_threads(before);
  ASSERT_TRUE(one && three);
  EXPECT_EQ(one->law.alpha, three->law.alpha);
  EXPECT_EQ(one->law.beta, three->law.beta);
  EXPECT_EQ(one->law.E, three->law.E);
  EXPECT_EQ(one->objective, three->objective);
}

TEST(LadderFit, RefusesDataThatCannotIdentifyTheLaw) {
  const Law truth = known_law();
  auto few = fit_law(dense_points(grid_runs(truth, {1e8, 1e9}, {1e10, 1e11}, 0, 1)), FitOptions{});
  ASSERT_FALSE(few);
  EXPECT_THAT(few.status().message(), HasSubstr("needs at least 6 runs, got 4"));
  auto same_d = fit_law(dense_points(grid_runs(truth, logspace(1e7, 1e10, 8), {1e10}, 0, 1)), FitOptions{});
  ASSERT_FALSE(same_d);
  EXPECT_THAT(same_d.status().message(), HasSubstr("same D"));
  auto same_n = fit_law(dense_points(grid_runs(truth, {1e8}, logspace(1e9, 1e12, 8), 0, 1)), FitOptions{});
  ASSERT_FALSE(same_n);
  EXPECT_THAT(same_n.status().message(), HasSubstr("same N"));

  const std::vector<ladder::Run> dense = grid_runs(truth, logspace(1e7, 1e10, 4), logspace(1e9, 1e12, 4), 0, 1);
  auto g = make_fit_points(dense, ParamCount::kActive, Sparsity::kTotalOverActive);
  ASSERT_FALSE(g);
  EXPECT_THAT(g.status().message(), HasSubstr("needs runs with different G"));
  auto e = make_fit_points(dense, ParamCount::kActive, Sparsity::kExperts);
  ASSERT_FALSE(e);
  EXPECT_THAT(e.status().message(), HasSubstr("synthetic:1: run 'run0' has no 'n_experts'"));
  auto t = make_fit_points(dense, ParamCount::kTotal, Sparsity::kTotalOverActive);
  ASSERT_FALSE(t);
  EXPECT_THAT(t.status().message(), HasSubstr("active"));
  FitOptions bad;
  bad.huber_delta = 0;
  auto d = fit_law(dense_points(dense), bad);
  ASSERT_FALSE(d);
  EXPECT_THAT(d.status().message(), HasSubstr("Huber delta"));
}

TEST(LadderFit, ChoosesActiveOrTotalParameters) {
  std::vector<ladder::Run> runs = grid_runs(known_law(), logspace(1e7, 1e10, 3), logspace(1e9, 1e12, 3), 0, 1, {8.0});
  auto active = make_fit_points(runs, ParamCount::kActive, Sparsity::kNone);
  auto total = make_fit_points(runs, ParamCount::kTotal, Sparsity::kNone);
  ASSERT_TRUE(active && total);
  EXPECT_NEAR(total->log_n[0] - active->log_n[0], std::log(8.0), 1e-12);
  EXPECT_EQ(total->log_d, active->log_d);
}

}  // namespace
}  // namespace mt::ladder
