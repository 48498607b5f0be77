// reliability.cpp — see reliability.h.
#include "plan/reliability.h"

#include <algorithm>
#include <cmath>

namespace mt::plan {

double young_interval_s(double write_s, double mtbf_s) { return std::sqrt(2.0 * write_s * mtbf_s); }

double daly_interval_s(double write_s, double mtbf_s) {
  if (write_s >= 2.0 * mtbf_s) return mtbf_s;
  const double r = write_s / (2.0 * mtbf_s);
  return std::sqrt(2.0 * write_s * mtbf_s) * (1.0 + std::sqrt(r) / 3.0 + r / 9.0) - write_s;
}

double expected_wall_s(double solve_s, double tau_s, double write_s, double restart_s, double mtbf_s) {
  const double M = mtbf_s;
  // expm1 keeps precision when (tau + d) << M.
  return M * std::exp(restart_s / M) * std::expm1((tau_s + write_s) / M) * solve_s / tau_s;
}

double checkpoint_goodput(double tau_s, double write_s, double restart_s, double mtbf_s) {
  return 1.0 / expected_wall_s(1.0, tau_s, write_s, restart_s, mtbf_s);
}

namespace {
double log_choose(int64_t n, int64_t k) {
  return std::lgamma(double(n) + 1) - std::lgamma(double(k) + 1) - std::lgamma(double(n - k) + 1);
}
}  // namespace

double binomial_cdf(int64_t k, int64_t n, double p) {
  if (k < 0) return 0.0;
  if (k >= n) return 1.0;
  if (p <= 0) return 1.0;
  if (p >= 1) return 0.0;
  double s = 0;
  for (int64_t i = 0; i <= k; ++i)
    s += std::exp(log_choose(n, i) + double(i) * std::log(p) + double(n - i) * std::log1p(-p));
  return std::min(1.0, s);
}

double at_least_k_of_n(int64_t need, int64_t n, double q) {
  if (need <= 0) return 1.0;
  if (need > n) return 0.0;
  // P(up >= need) = P(down <= n - need), down ~ Binomial(n, 1 - q).
  return binomial_cdf(n - need, n, 1.0 - q);
}

double poisson_cdf(int64_t k, double mean) {
  if (k < 0) return 0.0;
  if (mean <= 0) return 1.0;
  double term = std::exp(-mean), s = term;
  for (int64_t i = 1; i <= k; ++i) {
    term *= mean / double(i);
    s += term;
    if (term < 1e-18 * s && double(i) > mean) break;
  }
  return std::min(1.0, s);
}

const std::vector<FailureCause>& failure_causes() {
  // Dubey et al. 2024, Table 5 (counts of the 419 unexpected interruptions). Network switches and cables,
  // NCCL watchdog timeouts, software bugs and dependencies are repaired by rerouting or a restart; every
  // GPU, host and NIC cause, and unplanned host maintenance, removes the node.
  static const std::vector<FailureCause> kCauses = {
      {"faulty_gpu", "faulty GPU", 148, true},
      {"gpu_hbm3", "GPU HBM3 memory", 72, true},
      {"software_bug", "software bug", 54, false},
      {"network_switch_cable", "network switch or cable", 35, false},
      {"host_maintenance", "unplanned host maintenance", 32, true},
      {"gpu_sram", "GPU SRAM memory", 19, true},
      {"gpu_system_processor", "GPU system processor", 17, true},
      {"nic", "NIC", 7, true},
      {"nccl_watchdog", "NCCL watchdog timeout", 7, false},
      {"silent_data_corruption", "silent data corruption", 6, true},
      {"gpu_thermal", "GPU thermal interface and sensor", 6, true},
      {"ssd", "SSD", 3, true},
      {"power_supply", "power supply", 3, true},
      {"server_chassis", "server chassis", 2, true},
      {"io_expansion_board", "IO expansion board", 2, true},
      {"dependency", "dependency", 2, false},
      {"cpu", "CPU", 2, true},
      {"system_memory", "system memory", 2, true},
  };
  return kCauses;
}

double node_taking_share(const std::vector<double>& weights) {
  const auto& causes = failure_causes();
  double all = 0, node = 0;
  for (size_t i = 0; i < causes.size() && i < weights.size(); ++i) {
    all += weights[i];
    if (causes[i].takes_node) node += weights[i];
  }
  return all > 0 ? node / all : 0.0;
}

std::string to_string(Shortage s) { return s == Shortage::kWait ? "wait" : "shrink"; }

FailureRates failure_rates(const FailureInputs& in) {
  FailureRates r;
  const double lam_gpu = 1.0 / in.gpu_mtbf_h;
  const double rack_rate = in.rack_mtbf_h > 0 ? 1.0 / in.rack_mtbf_h : 0.0;
  const double units = double(std::max<int64_t>(in.units_used, 1));
  r.interruptions_per_h = double(in.job_gpus) * lam_gpu + units * rack_rate;
  r.node_losses_per_h = double(in.job_gpus) * lam_gpu * in.node_share;
  // A node lost inside a unit is absorbed when the unit keeps enough GPUs: always up to the SLA minimum
  // (the provider's guarantee), otherwise when fewer of its nodes than its slack are already in repair.
  const bool sla_covers = in.sla_min_gpus_up > 0 && in.gpus_needed_per_unit <= in.sla_min_gpus_up;
  const int64_t slack_nodes = (in.gpus_per_unit - in.gpus_needed_per_unit) / std::max<int64_t>(in.gpus_per_node, 1);
  if (sla_covers) {
    r.absorbed = 1.0;
  } else if (slack_nodes > 0) {
    const double in_repair = double(in.gpus_per_unit) * lam_gpu * in.node_share * in.repair_h;
    r.absorbed = poisson_cdf(slack_nodes - 1, in_repair);
  }
  const double node_units = r.node_losses_per_h * (1.0 - r.absorbed), rack_units = units * rack_rate;
  r.unit_losses_per_h = node_units + rack_units;
  r.unit_out_h = r.unit_losses_per_h > 0
                     ? (node_units * in.repair_h + rack_units * in.rack_repair_h) / r.unit_losses_per_h
                     : 0.0;
  // Without a free spare the job is short until the first unit in repair returns: with s spares all in
  // repair and the new loss, the earliest of s + 1 uniformly spread residual repair times, T / (s + 1).
  const double short_h = r.unit_out_h / double(in.spare_units + 1);
  const double lost_gpus =
      in.shrink_gpus > 0 ? std::ceil(double(in.gpus_needed_per_unit) / double(in.shrink_gpus)) * double(in.shrink_gpus)
                         : double(in.job_gpus);
  r.shrink_fraction = std::min(1.0, lost_gpus / double(std::max<int64_t>(in.job_gpus, 1)));
  r.policy = in.policy == Shortage::kShrink && r.shrink_fraction < 1.0 ? Shortage::kShrink : Shortage::kWait;
  // Shrinking costs the lost replicas' share of the shortage; they rejoin either at the job's next
  // restart (free, a mean 1 / interruption rate later) or at once for one more restart, whichever is cheaper.
  const double rejoin_h = std::min(r.shrink_fraction / r.interruptions_per_h, in.restart_s / 3600.0);
  r.shortage_cost_h = r.policy == Shortage::kShrink ? r.shrink_fraction * short_h + rejoin_h : short_h;
  // Renewal: per hour of running, unit_losses (1 - p_spare) shortages of shortage_cost_h full-job hours each.
  // The job's units fail only while it runs: a job that waits runs a share `availability` of the wall time,
  // so units in repair are Poisson(unit losses x availability x repair time), and availability is the fixed
  // point (found by bisection: the right side falls as availability grows). A job that shrinks keeps running.
  auto with_running_share = [&](double running) {
    FailureRates q = r;
    q.units_out_mean = r.unit_losses_per_h * running * r.unit_out_h;
    q.unit_up = std::exp(-q.units_out_mean / units);
    q.p_spare = in.spare_units > 0 ? poisson_cdf(in.spare_units - 1, q.units_out_mean) : 0.0;
    q.availability = 1.0 / (1.0 + r.unit_losses_per_h * (1.0 - q.p_spare) * r.shortage_cost_h);
    return q;
  };
  r = with_running_share(1.0);
  if (r.policy == Shortage::kWait && r.availability < 1.0) {
    double lo = r.availability, hi = 1.0;  // the fixed point lies between A(1) and 1
    for (int i = 0; i < 60; ++i) {
      const double mid = 0.5 * (lo + hi);
      (with_running_share(mid).availability > mid ? lo : hi) = mid;
    }
    r = with_running_share(0.5 * (lo + hi));
  }
  return r;
}

}  // namespace mt::plan
