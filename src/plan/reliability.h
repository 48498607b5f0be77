// reliability.h — failures, repairs, spares, checkpoints and goodput.
// Interruptions are a Poisson process; each restarts the job. A share of them
// (hardware, by the failure-cause table; Llama 3's by default) also takes a
// node out of service for the repair time. A node lost inside an allocation
// unit (a rack: an NVL72 rack, or one HGX node) is absorbed when the unit has
// slack (guaranteed by the provider SLA up to its minimum); otherwise the unit
// is lost and a spare unit from the cluster's shared pool replaces it when one
// is free (units in repair: an M/G/inf queue, so their count is Poisson). With
// no spare free the job waits for a repair, or shrinks by whole data-parallel
// replicas until one returns (elastic). Checkpoint interval: Young (1974)
// first order, Daly (2006) higher order; expected wall time from Daly's model.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mt::plan {

// sqrt(2 * write * mtbf).
double young_interval_s(double write_s, double mtbf_s);
// Daly (2006), eq. 37: sqrt(2 d M) [1 + sqrt(d / (2M)) / 3 + d / (18 M)] - d for d < 2M, else M.
double daly_interval_s(double write_s, double mtbf_s);
// Daly's expected wall time to finish `solve_s` of work: M e^(R/M) (e^((tau + d)/M) - 1) solve / tau.
double expected_wall_s(double solve_s, double tau_s, double write_s, double restart_s, double mtbf_s);
// solve / expected wall: the fraction of wall time that advances training.
double checkpoint_goodput(double tau_s, double write_s, double restart_s, double mtbf_s);

// Probability that at least `need` of `n` independent units are up, each up with probability q.
double at_least_k_of_n(int64_t need, int64_t n, double q);
// P(Binomial(n, p) <= k).
double binomial_cdf(int64_t k, int64_t n, double p);
// P(Poisson(mean) <= k).
double poisson_cdf(int64_t k, double mean);

// One root cause of unexpected interruptions. Default weights: Dubey et al.
// (2024), "The Llama 3 Herd of Models", Table 5 (419 unexpected
// interruptions in 54 days of Llama 3 405B pre-training on 16,384 H100).
// `takes_node`: the cause removes a node until it is repaired or replaced;
// otherwise the job only restarts (software, fabric, timeouts). The split is
// this project's reading of the categories (docs/planner.md).
struct FailureCause {
  std::string key;      // cluster file key under [failure_causes]
  std::string label;
  double llama3_count;  // interruptions in the Llama 3 table
  bool takes_node;
};
const std::vector<FailureCause>& failure_causes();
// Share of interruptions that take a node out, for weights aligned with failure_causes().
double node_taking_share(const std::vector<double>& weights);

enum class Shortage { kWait, kShrink };
std::string to_string(Shortage s);

// What the failure model needs to know about a job and its cluster. A "unit"
// is what the cluster allocates and spares (topology.gpus_per_rack GPUs).
struct FailureInputs {
  int64_t job_gpus = 8;
  int64_t units_used = 1;           // units the job runs on
  int64_t spare_units = 0;          // units owned but not used: the shared pool of spares
  int64_t gpus_per_unit = 8;
  int64_t gpus_needed_per_unit = 8;
  int64_t gpus_per_node = 8;        // a hardware failure takes out one node
  int64_t sla_min_gpus_up = 0;      // provider guarantee per unit (0 = none)
  int64_t shrink_gpus = 0;          // smallest group the job can drop (a data-parallel replica); 0 = cannot shrink
  double gpu_mtbf_h = 50000;        // job-interrupting failures per GPU, all causes
  double node_share = 0.766;        // share of interruptions that take a node out
  double repair_h = 72;             // a node taken out is back after this long (repair or replacement)
  double rack_mtbf_h = 0;           // whole-unit outages (0 = none)
  double rack_repair_h = 24;
  double restart_s = 600;           // one restart, checkpoint load included
  Shortage policy = Shortage::kShrink;
};

struct FailureRates {
  double interruptions_per_h = 0;   // every cause: each one restarts the job
  double node_losses_per_h = 0;     // interruptions that take a node of the job out
  double unit_losses_per_h = 0;     // ... and with it a unit (not absorbed by in-unit slack or the SLA)
  double absorbed = 0;              // share of node losses absorbed inside the unit
  double units_out_mean = 0;        // mean units in repair at any time (M/G/inf: Poisson)
  double unit_out_h = 0;            // mean repair time of a lost unit
  double p_spare = 0;               // P(a spare unit is free when one is lost)
  Shortage policy = Shortage::kShrink;  // what the job does when none is free (kWait when it cannot shrink)
  double shrink_fraction = 0;       // share of the job's throughput lost while shrunk
  double shortage_cost_h = 0;       // full-job hours lost per unit loss without a spare
  double unit_up = 1;               // P(a unit the job uses is serving)
  double availability = 1;          // run time / (run time + time waiting or shrunk), throughput-weighted
};
FailureRates failure_rates(const FailureInputs& in);

}  // namespace mt::plan
