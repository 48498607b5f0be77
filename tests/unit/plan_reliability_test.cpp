// plan_reliability_test.cpp — checkpoint intervals (Young, Daly; the Daly
// cases of shared/reference/hardware.md within one minute), Daly's expected
// wall time, binomial availability of racks under an SLA and spares.
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

TEST(PlanReliability, RackAvailabilityAndSpares) {
  RackPolicy p;
  p.racks_owned = 12;
  p.racks_used = 12;
  p.gpus_per_rack = 72;
  p.gpus_needed_per_rack = 64;
  p.sla_min_gpus_up = 64;  // the SLA covers GPU failures
  p.rack_mtbf_h = 2000;
  p.rack_repair_h = 24;
  const Availability none = availability(p);
  const double up = 1.0 / (1.0 + 24.0 / 2000.0);
  EXPECT_NEAR(none.rack_up, up, 1e-12);
  EXPECT_NEAR(none.rack_usable, up, 1e-12);
  EXPECT_NEAR(none.job, std::pow(up, 12), 1e-12);
  p.racks_used = 11;  // one spare
  const Availability spare = availability(p);
  EXPECT_NEAR(spare.job, at_least_k_of_n(11, 12, up), 1e-12);
  EXPECT_GT(spare.job, none.job + 0.1);
  // Needing more GPUs per rack than the SLA guarantees: binomial over GPUs in repair.
  RackPolicy h;
  h.racks_owned = h.racks_used = 1;
  h.gpus_per_rack = h.gpus_needed_per_rack = 8;
  h.gpu_mtbf_h = 1000, h.gpu_repair_h = 10;
  const double down = (10.0 / 1000.0) / (1.0 + 10.0 / 1000.0);
  EXPECT_NEAR(availability(h).rack_usable, std::pow(1 - down, 8), 1e-12);
}

}  // namespace
}  // namespace mt::plan
