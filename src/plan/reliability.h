// reliability.h — failures, checkpoints and goodput. Failures are a Poisson
// process (exponential inter-arrival) with the job's MTBF = 1 / (GPUs / GPU
// MTBF + racks / rack MTBF). Checkpoint interval: Young (1974) first order,
// Daly (2006) higher order; expected wall time from Daly's complete model.
// Rack availability: a rack serves the job when it is up and enough of its
// GPUs are (guaranteed by the SLA when the job needs no more than the SLA
// minimum; otherwise binomial over GPU repair states); the job runs when at
// least the racks it uses are available among those owned (spares included).
#pragma once
#include <cstdint>
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

struct RackPolicy {
  int64_t racks_owned = 1;
  int64_t racks_used = 1;          // the job needs this many racks available
  int64_t gpus_per_rack = 8;
  int64_t gpus_needed_per_rack = 8;
  int64_t sla_min_gpus_up = 0;     // 0 = no SLA
  double gpu_mtbf_h = 50000, gpu_repair_h = 72;
  double rack_mtbf_h = 0, rack_repair_h = 24;  // rack_mtbf_h = 0: racks never fail as a whole
};

struct Availability {
  double rack_up = 1;         // P(a rack is up as a whole)
  double rack_usable = 1;     // P(a rack can serve the job)
  double job = 1;             // P(enough racks are usable): fraction of time the job can run
};
Availability availability(const RackPolicy& p);

}  // namespace mt::plan
