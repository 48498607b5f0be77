// plan_reliability_test.cpp — checkpoint intervals (Young, Daly; the Daly
// cases of shared/reference/hardware.md within one minute), Daly's expected
// wall time, the Llama 3 failure causes, repairs with a shared spare pool
// (by hand), the SLA and in-rack slack, waiting vs shrinking, and finite
// availability at every cluster size.
#include <gtest/gtest.h>

#include <cmath>

#include "plan/reliability.h"

namespace mt::plan {
namespace {

constexpr double kMin = 60.0, kHour = 3600.0;

TEST(PlanReliability, DalyCasesFromTheReference) {
  // Restart 10 min, checkpoint write 5 min: optimum ~117 min at MTBF 24 h, 57 min at 6 h, 9.1 min at 15 min.
  EXPECT_NEAR(daly_interval_s(5 * kMin, 24 * kHour) / kMin, 117.0, 1.0);
  EXPECT_NEAR(daly_interval_s(5 * kMin, 6 * kHour) / kMin, 57.0, 1.0);
  EXPECT_NEAR(daly_interval_s(5 * kMin, 15 * kMin) / kMin, 9.1, 1.0);
  // Beyond d >= 2M Daly's rule is tau = M.
  EXPECT_DOUBLE_EQ(daly_interval_s(10 * kMin, 4 * kMin), 4 * kMin);
}

TEST(PlanReliability, Young) {
  EXPECT_DOUBLE_EQ(young_interval_s(5 * kMin, 24 * kHour), std::sqrt(2.0 * 300.0 * 86400.0));
  EXPECT_NEAR(young_interval_s(5 * kMin, 24 * kHour) / kMin, 120.0, 1e-9);
}

TEST(PlanReliability, ExpectedWallTime) {
  // No failures: every tau of work costs tau + d.
  EXPECT_NEAR(expected_wall_s(1000.0, 100.0, 10.0, 600.0, 1e15), 1100.0, 1e-3);
  // Hand value: M = 1 h, tau = 10 min, d = 1 min, R = 5 min.
  const double M = 3600, tau = 600, d = 60, R = 300;
  EXPECT_NEAR(expected_wall_s(3600.0, tau, d, R, M), M * std::exp(R / M) * (std::exp((tau + d) / M) - 1) * 6.0, 1e-6);
  EXPECT_NEAR(checkpoint_goodput(tau, d, R, M), 3600.0 / expected_wall_s(3600.0, tau, d, R, M), 1e-12);
  // Daly's interval is (close to) the goodput optimum.
  const double best = daly_interval_s(d, M);
  for (double f : {0.6, 0.8, 1.25, 1.6})
    EXPECT_GT(checkpoint_goodput(best, d, R, M), checkpoint_goodput(best * f, d, R, M)) << f;
}

TEST(PlanReliability, Binomial) {
  EXPECT_NEAR(binomial_cdf(1, 3, 0.5), 0.5, 1e-12);
  EXPECT_NEAR(binomial_cdf(0, 4, 0.1), std::pow(0.9, 4), 1e-12);
  EXPECT_DOUBLE_EQ(binomial_cdf(4, 4, 0.3), 1.0);
  const double q = 0.9;
  EXPECT_NEAR(at_least_k_of_n(11, 12, q), std::pow(q, 12) + 12 * std::pow(q, 11) * (1 - q), 1e-12);
  EXPECT_NEAR(at_least_k_of_n(12, 12, q), std::pow(q, 12), 1e-12);
}

TEST(PlanReliability, PoissonCdf) {
  EXPECT_NEAR(poisson_cdf(0, 2.0), std::exp(-2.0), 1e-15);
  EXPECT_NEAR(poisson_cdf(2, 2.0), std::exp(-2.0) * (1 + 2 + 2), 1e-15);
  EXPECT_DOUBLE_EQ(poisson_cdf(-1, 2.0), 0.0);
  EXPECT_DOUBLE_EQ(poisson_cdf(3, 0.0), 1.0);
  EXPECT_NEAR(poisson_cdf(400, 200.0), 1.0, 1e-12);
}

TEST(PlanReliability, Llama3FailureCauses) {
  // Dubey et al. 2024, Table 5: 419 unexpected interruptions; GPU, host and NIC causes take the node out.
  double all = 0, node = 0;
  for (const FailureCause& f : failure_causes()) {
    all += f.llama3_count;
    if (f.takes_node) node += f.llama3_count;
  }
  EXPECT_DOUBLE_EQ(all, 419.0);
  EXPECT_DOUBLE_EQ(node, 321.0);  // 419 - software 54 - network 35 - NCCL watchdog 7 - dependency 2
  std::vector<double> w;
  for (const FailureCause& f : failure_causes()) w.push_back(f.llama3_count);
  EXPECT_NEAR(node_taking_share(w), 321.0 / 419.0, 1e-15);
  // Weights are relative: doubling them changes nothing; only software bugs -> nothing takes a node.
  for (double& x : w) x *= 2;
  EXPECT_NEAR(node_taking_share(w), 321.0 / 419.0, 1e-15);
  std::vector<double> sw(failure_causes().size(), 0.0);
  sw[2] = 1;  // software bug
  EXPECT_EQ(failure_causes()[2].key, "software_bug");
  EXPECT_DOUBLE_EQ(node_taking_share(sw), 0.0);
}

FailureInputs hgx(int64_t used, int64_t spares) {
  FailureInputs f;
  f.job_gpus = 8 * used;
  f.units_used = used;
  f.spare_units = spares;
  f.gpus_per_unit = f.gpus_needed_per_unit = f.gpus_per_node = 8;
  f.gpu_mtbf_h = 50000;
  f.node_share = 0.75;
  f.repair_h = 72;
  f.restart_s = 600;
  f.policy = Shortage::kWait;
  return f;
}

TEST(PlanReliability, SparePoolByHand) {
  // 16 HGX nodes in use, 2 spare, 3/4 of interruptions take a node out for 72 h, the job waits.
  const FailureRates r = failure_rates(hgx(16, 2));
  EXPECT_NEAR(r.interruptions_per_h, 128.0 / 50000, 1e-15);
  EXPECT_NEAR(r.node_losses_per_h, 0.75 * 128.0 / 50000, 1e-15);
  EXPECT_NEAR(r.unit_losses_per_h, r.node_losses_per_h, 1e-15);  // a node is the whole unit
  // Units in repair: Poisson(rho); the job's units fail only while it runs, a share `availability` of the time.
  const double rho = r.unit_losses_per_h * r.availability * 72;
  EXPECT_NEAR(r.units_out_mean, rho, 1e-12);
  EXPECT_NEAR(r.p_spare, std::exp(-rho) * (1 + rho), 1e-12);     // fewer than 2 in repair
  EXPECT_EQ(r.policy, Shortage::kWait);
  EXPECT_NEAR(r.shortage_cost_h, 72.0 / 3, 1e-12);               // earliest of 3 residual repairs
  EXPECT_NEAR(r.availability, 1.0 / (1.0 + r.unit_losses_per_h * (1 - r.p_spare) * 24.0), 1e-12);
  // More spares, more availability; no spares: every loss waits a full repair.
  EXPECT_GT(failure_rates(hgx(16, 4)).availability, r.availability);
  const FailureRates none = failure_rates(hgx(16, 0));
  EXPECT_EQ(none.p_spare, 0.0);
  EXPECT_NEAR(none.availability, 1.0 / (1.0 + none.unit_losses_per_h * 72.0), 1e-12);
  // Software-only failures never take a node: availability is 1 (only restarts remain, in Daly's model).
  FailureInputs sw = hgx(16, 0);
  sw.node_share = 0;
  EXPECT_DOUBLE_EQ(failure_rates(sw).availability, 1.0);
}

TEST(PlanReliability, ShrinkDropsWholeReplicas) {
  FailureInputs f = hgx(64, 0);
  f.policy = Shortage::kShrink;
  f.shrink_gpus = 32;  // a data-parallel replica: tp 8 x pp 4
  const FailureRates r = failure_rates(f);
  EXPECT_EQ(r.policy, Shortage::kShrink);
  EXPECT_NEAR(r.shrink_fraction, 32.0 / 512, 1e-15);
  const double rejoin = std::min(r.shrink_fraction / r.interruptions_per_h, 600.0 / 3600);
  EXPECT_NEAR(r.shortage_cost_h, 32.0 / 512 * 72 + rejoin, 1e-12);
  EXPECT_GT(r.availability, failure_rates(hgx(64, 0)).availability);
  // A job that is one replica cannot shrink: it waits.
  f.shrink_gpus = 512;
  EXPECT_EQ(failure_rates(f).policy, Shortage::kWait);
}

TEST(PlanReliability, SlaAndSlackAbsorbNodeLosses) {
  // NVL72, the job uses 64 of 72 GPUs per rack: the SLA guarantees them, so only whole-rack outages remove a rack.
  FailureInputs f;
  f.job_gpus = 11 * 64;
  f.units_used = 11;
  f.spare_units = 1;
  f.gpus_per_unit = 72;
  f.gpus_needed_per_unit = 64;
  f.gpus_per_node = 4;
  f.sla_min_gpus_up = 64;
  f.rack_mtbf_h = 2000;
  f.rack_repair_h = 24;
  f.node_share = 0.75;
  const FailureRates sla = failure_rates(f);
  EXPECT_DOUBLE_EQ(sla.absorbed, 1.0);
  EXPECT_NEAR(sla.unit_losses_per_h, 11.0 / 2000, 1e-15);
  EXPECT_NEAR(sla.unit_out_h, 24.0, 1e-12);
  // The job cannot shrink (shrink_gpus = 0), so it waits: its racks fail only while it runs.
  EXPECT_NEAR(sla.p_spare, std::exp(-11.0 / 2000 * sla.availability * 24), 1e-12);
  // Without the SLA the 8 spare GPUs (two 4-GPU trays) absorb a loss while fewer than 2 trays are in repair.
  f.sla_min_gpus_up = 0;
  const FailureRates slack = failure_rates(f);
  const double in_repair = 72.0 / 50000 * 0.75 * 72;
  EXPECT_NEAR(slack.absorbed, std::exp(-in_repair) * (1 + in_repair), 1e-12);
  EXPECT_GT(slack.unit_losses_per_h, sla.unit_losses_per_h);
}

TEST(PlanReliability, FiniteAtEverySize) {
  for (int64_t nodes = 1; nodes <= (1 << 17); nodes *= 4)
    for (int64_t spares : {int64_t(0), nodes / 64 + 1})
      for (Shortage pol : {Shortage::kWait, Shortage::kShrink}) {
        FailureInputs f = hgx(nodes, spares);
        f.policy = pol;
        f.shrink_gpus = 64;
        const FailureRates r = failure_rates(f);
        EXPECT_TRUE(std::isfinite(r.availability)) << nodes;
        EXPECT_GT(r.availability, 0.0) << nodes;
        EXPECT_LE(r.availability, 1.0) << nodes;
        // Shrinking by 64 GPUs (one replica) never loses more than a tenth of the time until 8K nodes.
        if (pol == Shortage::kShrink && nodes >= 8 && nodes <= 8192) {
          EXPECT_GT(r.availability, 0.9) << nodes;
        }
      }
}

}  // namespace
}  // namespace mt::plan
