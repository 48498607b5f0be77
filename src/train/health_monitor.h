// health_monitor.h — the trainer's watch over its own run, in one place:
// periodic health checks (the recompute check on the training path, then the
// GEMM probe on every rank), the spike guard's verdict on every step, and
// what a spike does to the run (skip, cool down, roll back or stop). The
// trainer computes; the monitor judges, logs the events and keeps the
// counts. Every verdict is reached from values reduced over the ranks, so
// all ranks decide alike. docs/training.md has the policies.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "comm/comm.h"
#include "core/status.h"
#include "train/run_config.h"
#include "train/spike_guard.h"
#include "train/step_result.h"

namespace mt {

// What the run does after a spike step whose update was not applied.
enum class AfterSpike { kContinue, kRollback };

class HealthMonitor {
 public:
  // events go to RUN_DIR/events.jsonl (rank 0; "" = none).
  HealthMonitor(const TrainConfig& tc, Comm& world, std::string run_dir);

  // --- health checks (health.*) ---
  // A periodic check is due after `step` (health.every).
  bool due_after(int64_t step) const;
  // A checkpoint at `step` needs a check first: with periodic checks, a
  // checkpoint is taken only right after one passed.
  bool check_needed_before_checkpoint(int64_t step) const;
  // The recompute check (step > 0, health.recompute, 2+ ranks, no expert
  // parallelism): slice_loss(owner) is this rank's forward loss over rank
  // `owner`'s slice of the last micro-batch; then the GEMM probe on every
  // rank. Collective. An error names the culprit ranks; it is logged as a
  // health_check_failed event.
  Status check(int64_t step, const std::function<double(int64_t owner)>& slice_loss);
  int64_t last_passed() const { return last_passed_; }
  // Closing line (rank 0): the checks' cost against the step time.
  void print_cost(double step_seconds, int64_t steps) const;

  // --- spikes (spike.*) ---
  // The learning-rate factor at 0-based step `step` (lr-cooldown).
  double lr_factor(int64_t step) const { return spike_.lr_factor(step); }
  // The verdict on step `step` (1-based) about to be applied. A spike is
  // counted (and starts the cooldown under lr-cooldown); otherwise the step
  // joins the baseline.
  SpikeVerdict judge(int64_t step, double loss, double grad_norm);
  // After a spike step was logged: an error stops the run (policy "off", or
  // spike.max_in_a_row in a row); otherwise whether to roll back. Logs the
  // spike event.
  Result<AfterSpike> after_spike(const StepResult& r);
  // A rollback to `to_step` happened: more than spike.max_in_a_row to the
  // same checkpoint is an error (the spikes are not the data's fault).
  Status rolled_back(int64_t spike_step, int64_t to_step);

  // Checkpointed state: the guard's baseline, counters and cooldown.
  nlohmann::json to_json() const { return spike_.to_json(); }
  // Restores the guard from a checkpoint (null: a fresh guard). The spike
  // counters of this process survive (a rollback restores a checkpoint
  // without forgetting the spikes that caused it).
  Status restore(const nlohmann::json* saved, bool keep_counters);

 private:
  bool root() const { return world_.rank() == 0; }
  Status recompute_check(int64_t step, const std::function<double(int64_t)>& slice_loss);

  TrainConfig tc_;
  Comm& world_;
  std::string run_dir_;
  SpikeGuard spike_;
  std::map<int64_t, int64_t> rollbacks_to_;  // checkpoint step -> rollbacks to it in this process
  int64_t last_passed_ = -1;                 // step of the newest check that passed (-1: none)
  int64_t checks_ = 0;                       // checks run by this process, and their wall time:
  double first_seconds_ = 0.0;               // the first (it builds the probe's reference)
  double seconds_ = 0.0;                     // all the others
};

}  // namespace mt
