// health_monitor.cpp — see health_monitor.h.
#include "train/health_monitor.h"

#include <fmt/format.h>

#include <cstring>
#include <utility>
#include <vector>

#include "core/timer.h"
#include "dist/health_check.h"
#include "dist/mpi_comm.h"
#include "rundir/events_log.h"

namespace mt {

HealthMonitor::HealthMonitor(const TrainConfig& tc, Comm& world, std::string run_dir)
    : tc_(tc), world_(world), run_dir_(std::move(run_dir)), spike_(tc.spike) {}

bool HealthMonitor::due_after(int64_t step) const { return tc_.health.every > 0 && step % tc_.health.every == 0; }

bool HealthMonitor::check_needed_before_checkpoint(int64_t step) const {
  return tc_.health.every > 0 && last_passed_ != step;
}

Status HealthMonitor::check(int64_t step, const std::function<double(int64_t)>& slice_loss) {
  set_comm_context(fmt::format("health check after step {}", step));
  // The training path first (it names the rank from real work), then the probe.
  if (step > 0) MT_RETURN_IF_ERROR(recompute_check(step, slice_loss));
  const GemmVerdict v = check_gemm_all_ranks(world_);
  // The first check also builds the probe's fp64 reference and oneDNN's
  // primitive: a one-off, reported apart from the steady cost.
  if (checks_++ == 0)
    first_seconds_ = v.seconds;
  else
    seconds_ += v.seconds;
  if (v.ok()) {
    last_passed_ = step;
    return Status::ok();
  }
  if (root())
    append_event(run_dir_, {{"event", "health_check_failed"},
                            {"step", step},
                            {"check", "gemm"},
                            {"culprits", v.culprits},
                            {"why", v.message}});
  // Every rank returns this error and the first to abort ends the job: wait
  // until rank 0 has logged the event.
  world_.barrier("health check verdict");
  return Status::errorf("{}: health check failed, culprit rank {}: {}; stopping (the last checkpoint is kept)",
                        step == 0 ? std::string("before the first step") : fmt::format("step {}", step),
                        join_ranks(v.culprits), v.message);
}

// Silent corruption on the training path: every rank computes the loss of
// its own slice of the last micro-batch and of the next rank's slice, with
// the same gathered parameters; each slice's two losses must agree to the
// bit (the kernels are deterministic and thread-count invariant). A rank
// that computes wrong disagrees on two slices, its own and its neighbour's,
// and with 3+ ranks is the one rank common to both disagreements.
Status HealthMonitor::recompute_check(int64_t step, const std::function<double(int64_t)>& slice_loss) {
  const int64_t n = world_.size();
  if (!tc_.health.recompute || n < 2 || !slice_loss) return Status::ok();
  const double t0 = now_seconds();
  const double mine[2] = {slice_loss(world_.rank()), slice_loss((world_.rank() + 1) % n)};
  std::vector<double> all(size_t(2 * n));
  std::vector<int64_t> counts(static_cast<size_t>(n), 2), offsets(static_cast<size_t>(n), 0);
  for (int64_t r = 0; r < n; ++r) offsets[size_t(r)] = 2 * r;
  world_.allgatherv(mine, 2, all.data(), counts.data(), offsets.data(), DType::kF64, "allgather (recompute check)");
  std::vector<int64_t> suspicion(size_t(n), 0);
  std::string bad;
  for (int64_t q = 0; q < n; ++q) {
    const int64_t p = (q + n - 1) % n;  // rank p recomputed q's slice
    if (std::memcmp(&all[size_t(2 * q)], &all[size_t(2 * p + 1)], sizeof(double)) == 0) continue;
    ++suspicion[size_t(q)];
    ++suspicion[size_t(p)];
    bad += fmt::format("{}slice of rank {}: {:.17g} by rank {}, {:.17g} by rank {}", bad.empty() ? "" : "; ", q,
                       all[size_t(2 * q)], q, all[size_t(2 * p + 1)], p);
  }
  seconds_ += now_seconds() - t0;
  if (bad.empty()) return Status::ok();
  std::vector<int> culprits;
  for (int64_t r = 0; r < n; ++r)
    if (suspicion[size_t(r)] == 2 || (n == 2 && suspicion[size_t(r)] > 0)) culprits.push_back(int(r));
  if (root())
    append_event(run_dir_, {{"event", "health_check_failed"},
                            {"step", step},
                            {"check", "recompute"},
                            {"culprits", culprits},
                            {"why", bad}});
  world_.barrier("recompute check verdict");
  return Status::errorf(
      "step {}: health check failed, culprit rank {}: a micro-batch recomputed on another rank "
      "gives a different loss ({}){}; stopping (the last checkpoint is kept)",
      step, join_ranks(culprits), bad,
      n == 2 ? " (with 2 ranks either could be wrong; the GEMM check or a third rank decides)" : "");
}

void HealthMonitor::print_cost(double step_seconds, int64_t steps) const {
  if (!root() || checks_ < 2 || steps == 0) return;
  const double each = seconds_ / double(checks_ - 1), step = step_seconds / double(steps);
  const int64_t every = tc_.health.every;
  fmt::print(stderr,
             "# health checks: {} passed, the first {:.1f} ms (one-off reference), then {:.2f} ms each = {:.3f}% of "
             "a {:.1f} ms step{}\n",
             checks_, 1e3 * first_seconds_, 1e3 * each, 100.0 * each / step, 1e3 * step,
             every > 0 ? fmt::format(" ({:.4f}% of step time at health.every = {})",
                                     100.0 * each / step / double(every), every)
                       : std::string());
}

SpikeVerdict HealthMonitor::judge(int64_t step, double loss, double grad_norm) {
  SpikeVerdict v = spike_.check(loss, grad_norm);
  if (!v.spike) {
    spike_.accept(loss, grad_norm);
    return v;
  }
  ++spike_.in_a_row;
  ++spike_.total;
  if (tc_.spike.policy == SpikePolicy::kLrCooldown) spike_.start_cooldown(step);
  return v;
}

Result<AfterSpike> HealthMonitor::after_spike(const StepResult& r) {
  const SpikeConfig& sc = tc_.spike;
  if (root())
    fmt::print(stderr, "\n# step {}: spike: {}; policy {}: the update is not applied\n", r.step, r.spike,
               spike_policy_name(sc.policy));
  if (sc.policy == SpikePolicy::kOff)
    return Status::errorf("step {}: {} (diverged; spike.policy = \"off\"); the last checkpoint is kept", r.step,
                          r.spike);
  if (spike_.in_a_row >= sc.max_in_a_row)
    return Status::errorf(
        "step {}: {} spikes in a row (spike.max_in_a_row), the last: {}; stopping with the last "
        "checkpoint kept",
        r.step, spike_.in_a_row, r.spike);
  if (root())
    append_event(run_dir_, {{"event", "spike"},
                            {"step", r.step},
                            {"why", r.spike},
                            {"loss", r.loss},
                            {"grad_norm", r.grad_norm},
                            {"policy", spike_policy_name(sc.policy)}});
  return sc.policy == SpikePolicy::kRollback ? AfterSpike::kRollback : AfterSpike::kContinue;
}

Status HealthMonitor::rolled_back(int64_t spike_step, int64_t to_step) {
  const int64_t n = ++rollbacks_to_[to_step];
  if (n > tc_.spike.max_in_a_row)
    return Status::errorf(
        "step {}: rolled back to step {} {} times (spike.max_in_a_row) and the spikes keep coming; "
        "stopping with the checkpoints kept",
        spike_step, to_step, n - 1);
  return Status::ok();
}

Status HealthMonitor::restore(const nlohmann::json* saved, bool keep_counters) {
  const int64_t in_a_row = spike_.in_a_row, total = spike_.total;
  spike_ = SpikeGuard(tc_.spike);
  if (saved) MT_RETURN_IF_ERROR(spike_.from_json(*saved));
  if (keep_counters) {
    spike_.in_a_row = in_a_row;
    spike_.total = total;
  }
  return Status::ok();
}

}  // namespace mt
