// plan_failure_sim_test.cpp — the seeded failure simulation (plan/failure_sim.h):
// the same seed gives the same run, a run without failures costs exactly its
// work plus checkpoint writes, the mean over seeds agrees with the analytic
// expected wall time (Daly's checkpoint goodput x availability) within the
// simulation's noise, and no cluster size, spares or none, gives infinite or
// absurd days.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "plan/failure_sim.h"
#include "plan/reliability.h"

namespace mt::plan {
namespace {

std::vector<double> llama3_weights() {
  std::vector<double> w;
  for (const FailureCause& c : failure_causes()) w.push_back(c.llama3_count);
  return w;
}

// An HGX cluster: a unit is one 8-GPU node, a data-parallel replica is one node.
FailureSimInputs job(int64_t nodes, int64_t spares, Shortage policy, double work_days) {
  FailureSimInputs in;
  in.job.job_gpus = 8 * nodes;
  in.job.units_used = nodes;
  in.job.spare_units = spares;
  in.job.gpus_per_unit = 8;
  in.job.gpus_needed_per_unit = 8;
  in.job.gpus_per_node = 8;
  in.job.shrink_gpus = 8;
  in.job.node_share = node_taking_share(llama3_weights());
  in.job.policy = policy;
  in.cause_weights = llama3_weights();
  in.work_s = work_days * 86400;
  in.checkpoint_write_s = 60;
  const FailureRates r = failure_rates(in.job);
  in.checkpoint_interval_s = daly_interval_s(in.checkpoint_write_s, 3600 / r.interruptions_per_h);
  return in;
}

// The analytic expectation the planner reports: Daly's wall time over the availability.
double analytic_wall_s(const FailureSimInputs& in) {
  const FailureRates r = failure_rates(in.job);
  return expected_wall_s(in.work_s, in.checkpoint_interval_s, in.checkpoint_write_s, in.job.restart_s,
                         3600 / r.interruptions_per_h) / r.availability;
}

TEST(PlanFailureSim, SameSeedSameRun) {
  FailureSimInputs in = job(256, 2, Shortage::kShrink, 60);
  const FailureSimResult a = simulate_failures(in), b = simulate_failures(in);
  EXPECT_EQ(a.wall_s, b.wall_s);
  ASSERT_EQ(a.interruptions.size(), b.interruptions.size());
  for (size_t i = 0; i < a.interruptions.size(); ++i) {
    EXPECT_EQ(a.interruptions[i].t_s, b.interruptions[i].t_s);
    EXPECT_EQ(a.interruptions[i].cause, b.interruptions[i].cause);
  }
  in.seed = 2;
  EXPECT_NE(simulate_failures(in).wall_s, a.wall_s);
  EXPECT_GT(a.interruptions.size(), 20u);
  // Counter-based draws: draw i depends on (seed, i) only.
  EXPECT_EQ(counter_uniform(7, 1000), counter_uniform(7, 1000));
  EXPECT_NE(counter_uniform(7, 1000), counter_uniform(8, 1000));
}

TEST(PlanFailureSim, NoFailuresCostWorkPlusCheckpoints) {
  FailureSimInputs in = job(16, 0, Shortage::kWait, 10);
  in.job.gpu_mtbf_h = 1e300;
  in.checkpoint_interval_s = 3600;
  const FailureSimResult r = simulate_failures(in);
  ASSERT_TRUE(r.finished);
  EXPECT_TRUE(r.interruptions.empty());
  // 240 h of work in 1-hour segments: 239 checkpoint writes (none after the last).
  EXPECT_NEAR(r.wall_s, in.work_s + 239 * 60, 1e-6);
  EXPECT_NEAR(r.checkpoint_s, 239 * 60, 1e-6);
  EXPECT_NEAR(r.progress.back().second, 1.0, 1e-12);
}

// Mean of `n` seeds and its standard error.
std::pair<double, double> mean_wall(FailureSimInputs in, int n, double* interruptions = nullptr) {
  double s = 0, s2 = 0, k = 0;
  for (int i = 0; i < n; ++i) {
    in.seed = uint64_t(100 + i);
    const FailureSimResult r = simulate_failures(in);
    EXPECT_TRUE(r.finished);
    s += r.wall_s, s2 += r.wall_s * r.wall_s, k += double(r.interruptions.size());
  }
  const double m = s / n, var = std::max(0.0, s2 / n - m * m) * n / (n - 1);
  if (interruptions) *interruptions = k / n;
  return {m, std::sqrt(var / n)};
}

// Two cluster sizes, each with hundreds of interruptions per run: the simulated mean lands within the
// simulation's noise (4 standard errors) plus 1% (the analytic shortage time is an approximation).
TEST(PlanFailureSim, AgreesWithTheAnalyticDays) {
  struct Case {
    int64_t nodes, spares;
    Shortage policy;
    double days;
  };
  for (const Case& c : {Case{2048, 8, Shortage::kShrink, 40}, Case{256, 2, Shortage::kWait, 200},
                        Case{256, 0, Shortage::kShrink, 200}}) {
    const FailureSimInputs in = job(c.nodes, c.spares, c.policy, c.days);
    double k = 0;
    const auto [mean, se] = mean_wall(in, 12, &k);
    const double expect = analytic_wall_s(in);
    EXPECT_GT(k, 150) << c.nodes;
    EXPECT_NEAR(mean, expect, 4 * se + 0.01 * expect) << c.nodes << " nodes, " << c.spares << " spares, "
                                                      << to_string(c.policy) << ": simulated " << mean / 86400
                                                      << " days, analytic " << expect / 86400;
  }
}

// No spares and waiting for every 72-hour repair is slow, but finite and what the model says; no size
// gives an infinite or absurd run.
TEST(PlanFailureSim, NoSparesAtAnySizeStaysFinite) {
  for (int64_t nodes : {1, 16, 256, 2048}) {
    for (Shortage policy : {Shortage::kWait, Shortage::kShrink}) {
      const FailureSimInputs in = job(nodes, 0, policy, 5);
      const FailureSimResult r = simulate_failures(in);
      ASSERT_TRUE(r.finished) << nodes;
      EXPECT_TRUE(std::isfinite(r.wall_s));
      EXPECT_GE(r.wall_s, in.work_s);
      const double expect = analytic_wall_s(in);
      EXPECT_TRUE(std::isfinite(expect));
      EXPECT_LT(r.wall_s, 5 * expect + 30 * 86400) << nodes << " " << to_string(policy);
      if (policy == Shortage::kShrink && nodes > 1) EXPECT_EQ(r.waiting_s, 0.0) << nodes;
      for (const SimPeriod& p : r.periods) EXPECT_LE(p.t0_s, p.t1_s);
    }
  }
}

}  // namespace
}  // namespace mt::plan
