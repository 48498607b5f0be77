// trainer_checkpoint.cpp — what a training checkpoint holds: every parameter
// under its global name, the optimizer's state (AdamW moments as
// adam_m.<name> / adam_v.<name>, Muon's momentum as muon_m.<name>, the
// Hyperball radii as hyperball_radius), the aux-loss-free router biases, and
// in `state` the step, seed and data position. Restoring checks that the saved config is compatible.
#include <fmt/format.h>

#include <filesystem>
#include <limits>
#include <map>
#include <sstream>

#include "ckpt/checkpoint.h"
#include "optim/lr_schedule.h"
#include "train/phase_schedule.h"
#include "train/trainer.h"
#include "train/trainer_dist.h"
#include "rundir/events_log.h"
#include "rundir/output_dir.h"

namespace mt {

namespace {

// The phases a checkpoint at `step` has begun: those whose first step lies
// before it. A branch taken at a phase's end (`--stop-at NAME`) has not
// begun the next, so the phases after it are still the user's to choose —
// a context extension tried with and without YaRN from one base run.
Result<size_t> phases_begun(const RunConfig& saved, int64_t step) {
  if (saved.phases.empty()) return std::numeric_limits<size_t>::max();  // one phase, begun: phases are not added
  auto sched = PhaseSchedule::make(saved);
  if (!sched) return sched.status();
  size_t n = 0;
  for (const PhaseSpan& p : sched->phases())
    if (p.first_step < step) ++n;
  return n;
}

// Keys that may differ between the saved and the resuming config; `begun`
// phases are kept, the rest dropped (they are compared by what they change:
// the learning rates and batches already applied, and the data ledger).
RunConfig normalised(RunConfig c, size_t begun) {
  if (c.phases.size() > begun) c.phases.resize(begun);
  c = with_absolute_paths(std::move(c));  // a checkpoint saved before paths were absolute names the same files
  c.train.steps = 0;
  c.train.checkpoint_every = 0;
  c.train.keep_checkpoints = 0;
  c.train.async_checkpoint = true;
  c.train.pack_weights = true;  // the same bits either way
  c.train.log_every = 0;
  c.train.eval_every = 0;  // evaluation never changes training
  c.train.eval_batches = 0;
  c.train.tensorboard = true;  // logging only
  c.train.threads = 0;
  c.train.health = HealthConfig();  // checks never change training
  c.train.optimizer.state_precision = StatePrecision::kFp32;  // checkpoints hold moments in F32: either resumes
  c.dist = DistConfig();  // any layout resumes any checkpoint (resharding)
  // Dense streaming is bit-identical to computing in place; sparse streaming
  // changes what the experts compute, so its density must stay.
  const double density = c.stream.enabled ? c.stream.expert_density : 1.0;
  c.stream = StreamConfig();
  c.stream.expert_density = density;
  c.train.activation_checkpointing = ActivationCheckpointing::kAuto;  // recomputation too
  c.source.clear();
  return c;
}

}  // namespace

// A resumed run may change train.steps only if every learning rate already
// applied stays what it was: the warmup-stable-decay way of extending a run
// (continue the stable phase, decay over the new end). Anything else would
// make the continuation a different run than the one trained so far.
Status check_run_length_change(const std::string& dir, const RunConfig& was_cfg, const RunConfig& now_cfg,
                               int64_t step) {
  const TrainConfig &was = was_cfg.train, &now = now_cfg.train;
  if (was.steps == now.steps) return Status::ok();
  if (now.steps < step)
    return Status::errorf("{}: train.steps = {} is below the checkpoint's step {}", dir, now.steps, step);
  auto a_sched = PhaseSchedule::make(was_cfg), b_sched = PhaseSchedule::make(now_cfg);
  if (!a_sched) return a_sched.status();
  if (!b_sched) return b_sched.status();
  for (int64_t s = 0; s < step; ++s) {
    const double a = a_sched->learning_rate(s), b = b_sched->learning_rate(s);
    const int64_t ba = a_sched->batch_at(s), bb = b_sched->batch_at(s);
    if (a == b && ba == bb) continue;
    const std::string what = a != b ? fmt::format("the learning rate already applied at step {} ({:.6g} -> {:.6g})",
                                                  s + 1, a, b)
                                    : fmt::format("the batch already trained at step {} ({} -> {} sequences)", s + 1,
                                                  ba, bb);
    return Status::errorf(
        "{}: train.steps {} -> {} would change {}; a run can be extended only while nothing applied depends on its "
        "length (schedule = \"wsd\" before its decay starts, or \"constant\"). Keep train.steps = {}, or start a "
        "new run (--move-aside)",
        dir, was.steps, now.steps, what, was.steps);
  }
  fmt::print(stderr, "# train.steps {} -> {}: the learning rates of steps 1..{} are unchanged; the schedule ({}) now "
                     "ends at step {}\n",
             was.steps, now.steps, step, now.schedule.kind == ScheduleKind::kWsd ? "warmup-stable-decay" : "constant",
             now.steps);
  return Status::ok();
}

Status Trainer::save_checkpoint() {
  // Whole tensors in one process; this rank's pieces of them under MPI.
  std::vector<TensorView> views = checkpoint_views();
  if (rl_) rl_->settle_pending();  // the rollouts generated ahead go into the checkpoint
  if (rl_)
    for (TensorView& v : rl_->checkpoint_views()) views.push_back(std::move(v));
  nlohmann::json state;
  state["step"] = step_;
  state["seed"] = cfg_.train.seed;
  // The data position is a function of the step and the sequences each
  // segment skipped (rollbacks): next_sequence is for readers.
  state["data"] = {{"next_sequence", step_ < schedule().total_steps() ? data_->position(step_) : int64_t(-1)},
                   {"skip_sequences", data_->skips()},
                   {"source", data_->describe()}};
  if (!skipped_tokens_.empty()) state["data"]["skipped_bucket_tokens"] = skipped_tokens_;
  state["spike"] = health_->to_json();
  if (auto ledger = data_->ledger(step_); !ledger.empty()) {
    nlohmann::json bt = nlohmann::json::object();
    for (const auto& [name, tokens] : ledger) bt[name] = tokens;
    state["data"]["bucket_tokens"] = bt;
    if (!dropped_total_.empty()) {
      nlohmann::json bd = nlohmann::json::object();
      for (size_t b = 0; b < dropped_total_.size(); ++b) bd[data_->bucket_names()[b]] = dropped_total_[b];
      state["data"]["bucket_dropped"] = bd;
    }
  }
  state["rng"] = {{"kind", "philox4x32-10"}, {"seed", cfg_.train.seed}, {"init_stream", "xxh64(tensor name)"}};
  if (rl_) state["rl"] = rl_->state();
  state["dist"] = {{"world_size", dist_->world.size()}, {"ep", dist_->shape.ep}, {"fsdp", dist_->shape.fsdp}};
  return ckpt_->start(step_, views, state);
}

Status Trainer::stop_keeping_last_checkpoint(Status why) {
  Status committed = ckpt_->finish();
  if (!committed) return Status::errorf("{}; and the checkpoint being written failed: {}", why.message(), committed.message());
  return why;
}

Status Trainer::checked_checkpoint(int64_t step) {
  if (health_->check_needed_before_checkpoint(step))
    if (Status h = health_check(step); !h) return stop_keeping_last_checkpoint(std::move(h));
  return save_checkpoint();
}

Status Trainer::restore(const std::string& dir, bool keep_spike_counters) {
  auto loaded = read_checkpoint(dir);
  if (!loaded) return loaded.status();
  const LoadedCheckpoint& ck = loaded.value();
  auto saved = parse_run_config(ck.config_toml, dir + "/manifest.json", {});
  if (!saved) return saved.status();
  auto begun = phases_begun(saved.value(), ck.step);
  if (!begun) return begun.status();
  const std::string was = to_toml(normalised(saved.value(), *begun)), now = to_toml(normalised(cfg_, *begun));
  if (was != now)
    return Status::errorf(
        "{}: checkpoint was written with a different config (only train.steps, checkpoint_every, "
        "keep_checkpoints, log_every, eval_every, eval_batches, tensorboard, threads, async_checkpoint, pack_weights, "
        "activation_checkpointing, optim.state_precision, health.*, stream.* other than expert_density, the "
        "[dist] layout, and the [[phase]] tables of phases not yet begun may change on resume); differences "
        "(checkpoint -> now):\n{}",
        dir, describe_differences(flatten_toml(was), flatten_toml(now)));
  // Whatever world size wrote it, each rank takes its ranges of the whole tensors.
  MT_RETURN_IF_ERROR(load_checkpoint_tensors(ck));
  step_ = ck.state.value("step", int64_t(-1));
  if (step_ != ck.step) return Status::errorf("{}: manifest step {} and state step {} differ", dir, ck.step, step_);
  MT_RETURN_IF_ERROR(check_run_length_change(dir, saved.value(), cfg_, step_));
  std::vector<int64_t> skips(schedule().segments().size(), 0);
  skipped_tokens_.clear();
  if (ck.state.contains("data")) {
    const nlohmann::json& d = ck.state["data"];
    if (d.contains("skip_sequences")) {
      skips = d["skip_sequences"].get<std::vector<int64_t>>();
      if (skips.size() != schedule().segments().size())
        return Status::errorf("{}: skip_sequences has {} segments, the run has {}", dir, skips.size(),
                              schedule().segments().size());
    } else {  // written before phases: whole steps of train.batch_size x grad_accum skipped
      skips[0] = d.value("offset_steps", int64_t(0)) * schedule().batch_at(0);
    }
    if (ck.state["data"].contains("skipped_bucket_tokens"))
      skipped_tokens_ = ck.state["data"]["skipped_bucket_tokens"].get<std::map<std::string, int64_t>>();
  }
  data_->set_skips(std::move(skips));
  if (rl_) MT_RETURN_IF_ERROR(rl_->restore(ck));
  dropped_total_.assign(data_->bucket_names().size(), 0);
  if (ck.state.contains("data") && ck.state["data"].contains("bucket_dropped"))
    for (size_t b = 0; b < dropped_total_.size(); ++b)
      dropped_total_[b] = ck.state["data"]["bucket_dropped"].value(data_->bucket_names()[b], int64_t(0));
  MT_RETURN_IF_ERROR(health_->restore(ck.state.contains("spike") ? &ck.state["spike"] : nullptr, keep_spike_counters));
  // The ledger is recomputed from the step; a different one means the dataset
  // or the mixture changed under the same paths.
  if (ck.state.contains("data") && ck.state["data"].contains("bucket_tokens")) {
    nlohmann::json now = nlohmann::json::object();
    for (const auto& [name, tokens] : data_->ledger(step_)) now[name] = tokens;
    if (now != ck.state["data"]["bucket_tokens"])
      return Status::errorf("{}: the data stream differs from the one this checkpoint was trained on (per-bucket "
                            "token ledger {} at save, {} now): the dataset or mixture changed",
                            dir, ck.state["data"]["bucket_tokens"].dump(), now.dump());
  }
  if (is_root()) fmt::print(stderr, "# resumed from {} (step {})\n", dir, step_);
  return Status::ok();
}

void Trainer::record_skipped(int64_t step, int64_t from, int64_t to) {
  for (const auto& [name, tokens] : data_->tokens_between(step, from, to))
    if (tokens > 0) skipped_tokens_[name] += tokens;
}

// PaLM's recipe: back to the newest checkpoint, and on from the data after
// the spike. The data in between (the steps since the checkpoint and the
// spike's own) is recorded as skipped, so the ledger stays exact and the
// no-repeat guarantee holds: data positions only move forward.
Status Trainer::rollback(int64_t spike_step) {
  const TrainConfig& tc = cfg_.train;
  const int64_t spike = spike_step - 1;               // 0-based: the step whose data caused it
  const int64_t spike_end = data_->spike_end(spike);  // the position after its data
  MT_RETURN_IF_ERROR(ckpt_->finish());
  auto latest = find_latest_checkpoint_dir(opt_.run_dir);
  if (opt_.run_dir.empty() || !latest)
    return Status::errorf("step {}: spike.policy = \"rollback\" needs a checkpoint to return to (none yet)", spike_step);
  // The spike counters survive the restore.
  MT_RETURN_IF_ERROR(restore(latest.value(), /*keep_spike_counters=*/true));
  // Spikes that come back after every rollback to the same checkpoint are
  // not the data's fault: stop rather than skip data forever.
  MT_RETURN_IF_ERROR(health_->rolled_back(spike_step, step_));
  auto skipped = data_->skip_for_rollback(spike, step_, spike_end);
  if (!skipped)
    return Status::errorf("step {}: rolling back to step {}: {}", spike_step, step_, skipped.status().message());
  const auto [from, to] = *skipped;
  record_skipped(spike, from, to);
  refresh_bf16_params();
  if (is_root()) {
    // metrics.jsonl holds the run as it stands: the steps rolled back go.
    metrics_.reset();
    auto f = MetricsLog::open(opt_.run_dir, step_, tc.tensorboard ? TensorBoard::kOn : TensorBoard::kOff);
    if (!f) return f.status();
    metrics_ = std::move(f.value());
    append_event(opt_.run_dir, {{"event", "rollback"},
                                {"spike_step", spike_step},
                                {"to_step", step_},
                                {"skipped_sequences", to - from},
                                {"skip_sequences", data_->skips()}});
  }
  if (is_root())
    fmt::print(stderr, "# rollback: back to step {} ({}); data resumes after the spike's ({} sequences skipped)\n",
               step_, latest.value(), to - from);
  return Status::ok();
}

}  // namespace mt
