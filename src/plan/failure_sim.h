// failure_sim.h — one simulated run of a job under the planner's failure
// model (reliability.h), for the HTML failure timeline and as a check of the
// analytic expected days. Pure and deterministic: randomness is counter-based
// (draw i is a hash of (seed, i)), so the same inputs and seed give the same
// run on every machine.
//
// What is simulated, event by event in wall time:
//   - interruptions: a Poisson process at the job's rate (GPUs / GPU MTBF +
//     racks / rack MTBF), running only while the job runs or restarts (a job
//     waiting for hardware does not fail); the cause of each is drawn from
//     the cluster's cause weights (whole-rack outages at their own rate);
//   - checkpoints: `checkpoint_interval_s` of compute, then a blocking write;
//     an interruption loses the compute since the last finished checkpoint
//     and costs a restart, itself interruptible (Daly's model, which the
//     analytic checkpoint goodput solves in closed form);
//   - repairs: a node-taking cause takes its rack out of the job unless the
//     rack absorbs the loss (drawn with the analytic probability: in-rack
//     slack and the SLA are not tracked node by node); the rack is back after
//     the repair time (a whole-rack outage: the rack repair time); while it
//     is out, a free rack of the spare pool replaces it;
//   - shortage: with no rack free the job waits until one returns, or (policy
//     shrink, when it can) restarts without whole data-parallel replicas and
//     runs slower by the analytic shrink fraction per missing rack; when a
//     rack returns the job rejoins at its next restart, or restarts at once
//     when that is cheaper (the analytic model's rule: restart time < shrink
//     fraction / interruption rate).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "plan/reliability.h"

namespace mt::plan {

struct FailureSimInputs {
  FailureInputs job;                  // the job and its cluster (reliability.h)
  std::vector<double> cause_weights;  // aligned with failure_causes()
  double work_s = 0;                  // compute at full speed (the plan's days x 86400)
  double checkpoint_interval_s = 0;   // compute between checkpoints
  double checkpoint_write_s = 0;      // training blocked per checkpoint
  uint64_t seed = 1;
  double max_wall_factor = 1000;      // stop (finished = false) past this many times work_s
};

struct SimInterruption {
  double t_s = 0;          // wall time
  int cause = -1;          // index into failure_causes(); -1 = a whole-rack outage
  bool unit_lost = false;  // a rack left the job (not absorbed inside it)
  bool spare_used = false; // ... and a spare rack replaced it
  double lost_s = 0;       // compute lost since the last checkpoint
};

struct SimPeriod {
  double t0_s = 0, t1_s = 0;
  bool shrunk = false;     // running without some replicas; else waiting for a repair
  double speed = 0;        // throughput relative to the full job (0 while waiting)
};

struct FailureSimResult {
  bool finished = true;
  double wall_s = 0;
  std::vector<SimInterruption> interruptions;
  std::vector<SimPeriod> periods;                   // waiting and shrunk stretches, in order
  std::vector<std::pair<double, double>> progress;  // (wall s, fraction of the work done), at most ~2000 points
  int64_t units_lost = 0, spares_used = 0, planned_restarts = 0;
  double waiting_s = 0, shrunk_s = 0, restarting_s = 0, lost_s = 0, checkpoint_s = 0;
};

FailureSimResult simulate_failures(const FailureSimInputs& in);

// The uniform draw number `i` of stream `seed`, in [0, 1): SplitMix64 of (seed, i).
double counter_uniform(uint64_t seed, uint64_t i);

}  // namespace mt::plan
