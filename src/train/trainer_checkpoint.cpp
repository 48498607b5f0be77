// trainer_checkpoint.cpp — what a training checkpoint holds: every parameter
// under its global name, the optimizer's state (AdamW moments as
// adam_m.<name> / adam_v.<name>, Muon's momentum as muon_m.<name>, the
// Hyperball radii as hyperball_radius), the aux-loss-free router biases, and
// in `state` the step, seed and data position. Restoring checks that the saved config is compatible.
#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <sstream>

#include "ckpt/checkpoint.h"
#include "optim/lr_schedule.h"
#include "train/trainer.h"
#include "train/trainer_dist.h"
#include "rundir/events_log.h"
#include "rundir/output_dir.h"

namespace mt {

namespace {

// Keys that may differ between the saved and the resuming config.
RunConfig normalised(RunConfig c) {
  c = with_absolute_paths(std::move(c));  // a checkpoint saved before paths were absolute names the same files
  c.train.steps = 0;
  c.train.checkpoint_every = 0;
  c.train.keep_checkpoints = 0;
  c.train.async_checkpoint = true;
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
Status check_run_length_change(const std::string& dir, const TrainConfig& was, const TrainConfig& now,
                               int64_t step) {
  if (was.steps == now.steps) return Status::ok();
  if (now.steps < step)
    return Status::errorf("{}: train.steps = {} is below the checkpoint's step {}", dir, now.steps, step);
  for (int64_t s = 0; s < step; ++s) {
    const double a = learning_rate(was.schedule, s, was.steps), b = learning_rate(now.schedule, s, now.steps);
    if (a != b)
      return Status::errorf(
          "{}: train.steps {} -> {} would change the learning rate already applied at step {} ({:.6g} -> {:.6g}); a "
          "run can be extended only while no applied rate depends on its length (schedule = \"wsd\" before its "
          "decay starts, or \"constant\"). Keep train.steps = {}, or start a new run (--move-aside)",
          dir, was.steps, now.steps, s + 1, a, b, was.steps);
  }
  fmt::print(stderr, "# train.steps {} -> {}: the learning rates of steps 1..{} are unchanged; the schedule ({}) now "
                     "ends at step {}\n",
             was.steps, now.steps, step, now.schedule.kind == ScheduleKind::kWsd ? "warmup-stable-decay" : "constant",
             now.steps);
  return Status::ok();
}

Status Trainer::save_checkpoint() {
  // Whole tensors in one process; this rank's pieces of them under MPI.
  const std::vector<TensorView> views = checkpoint_views();
  nlohmann::json state;
  state["step"] = step_;
  state["seed"] = cfg_.train.seed;
  state["data"] = {{"next_sequence", data_step() * cfg_.train.grad_accum * cfg_.train.batch_size},
                   {"offset_steps", data_offset_steps_},
                   {"source", data_->describe()}};
  if (!skipped_tokens_.empty()) state["data"]["skipped_bucket_tokens"] = skipped_tokens_;
  state["spike"] = health_->to_json();
  if (auto ledger = data_->ledger(data_step() * cfg_.train.grad_accum * cfg_.train.batch_size); !ledger.empty()) {
    nlohmann::json bt = nlohmann::json::object();
    for (const auto& [name, tokens] : ledger) bt[name] = tokens;
    state["data"]["bucket_tokens"] = bt;
  }
  state["rng"] = {{"kind", "philox4x32-10"}, {"seed", cfg_.train.seed}, {"init_stream", "xxh64(tensor name)"}};
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
  const std::string was = to_toml(normalised(saved.value())), now = to_toml(normalised(cfg_));
  if (was != now)
    return Status::errorf(
        "{}: checkpoint was written with a different config (only train.steps, checkpoint_every, "
        "keep_checkpoints, log_every, eval_every, eval_batches, tensorboard, threads, async_checkpoint, "
        "activation_checkpointing, optim.state_precision, health.*, stream.* other than expert_density and the "
        "[dist] layout may change on resume); differences (checkpoint -> now):\n{}",
        dir, describe_differences(flatten_toml(was), flatten_toml(now)));
  // Whatever world size wrote it, each rank takes its ranges of the whole tensors.
  MT_RETURN_IF_ERROR(load_checkpoint_tensors(ck));
  step_ = ck.state.value("step", int64_t(-1));
  if (step_ != ck.step) return Status::errorf("{}: manifest step {} and state step {} differ", dir, ck.step, step_);
  MT_RETURN_IF_ERROR(check_run_length_change(dir, saved.value().train, cfg_.train, step_));
  data_offset_steps_ = 0;
  skipped_tokens_.clear();
  if (ck.state.contains("data")) {
    data_offset_steps_ = ck.state["data"].value("offset_steps", int64_t(0));
    if (ck.state["data"].contains("skipped_bucket_tokens"))
      skipped_tokens_ = ck.state["data"]["skipped_bucket_tokens"].get<std::map<std::string, int64_t>>();
  }
  MT_RETURN_IF_ERROR(health_->restore(ck.state.contains("spike") ? &ck.state["spike"] : nullptr, keep_spike_counters));
  // The ledger is recomputed from the step; a different one means the dataset
  // or the mixture changed under the same paths.
  if (ck.state.contains("data") && ck.state["data"].contains("bucket_tokens")) {
    nlohmann::json now = nlohmann::json::object();
    for (const auto& [name, tokens] : data_->ledger(data_step() * cfg_.train.grad_accum * cfg_.train.batch_size))
      now[name] = tokens;
    if (now != ck.state["data"]["bucket_tokens"])
      return Status::errorf("{}: the data stream differs from the one this checkpoint was trained on (per-bucket "
                            "token ledger {} at save, {} now): the dataset or mixture changed",
                            dir, ck.state["data"]["bucket_tokens"].dump(), now.dump());
  }
  if (is_root()) fmt::print(stderr, "# resumed from {} (step {})\n", dir, step_);
  return Status::ok();
}

void Trainer::record_skipped(int64_t first_sequence, int64_t count) {
  const auto before = data_->ledger(first_sequence), after = data_->ledger(first_sequence + count);
  for (size_t b = 0; b < before.size() && b < after.size(); ++b)
    if (after[b].second > before[b].second) skipped_tokens_[after[b].first] += after[b].second - before[b].second;
}

// PaLM's recipe: back to the newest checkpoint, and on from the data after
// the spike. The data in between (the steps since the checkpoint and the
// spike's own) is recorded as skipped, so the ledger stays exact and the
// no-repeat guarantee holds: data positions only move forward.
Status Trainer::rollback(int64_t spike_step) {
  const TrainConfig& tc = cfg_.train;
  const int64_t spike_data_step = data_step() - 1;  // the data the spike step read
  MT_RETURN_IF_ERROR(ckpt_->finish());
  auto latest = find_latest_checkpoint_dir(opt_.run_dir);
  if (opt_.run_dir.empty() || !latest)
    return Status::errorf("step {}: spike.policy = \"rollback\" needs a checkpoint to return to (none yet)", spike_step);
  // The spike counters survive the restore.
  MT_RETURN_IF_ERROR(restore(latest.value(), /*keep_spike_counters=*/true));
  // Spikes that come back after every rollback to the same checkpoint are
  // not the data's fault: stop rather than skip data forever.
  MT_RETURN_IF_ERROR(health_->rolled_back(spike_step, step_));
  const int64_t from = data_step() * tc.grad_accum * tc.batch_size;
  const int64_t new_offset = spike_data_step + 1 - step_;
  const int64_t to = (step_ + new_offset) * tc.grad_accum * tc.batch_size;
  const int64_t needed = (tc.steps + new_offset) * tc.grad_accum * tc.batch_size;
  if (needed > data_->capacity())
    return Status::errorf("step {}: rolling back to step {} skips {} sequences, and the run would then need {} "
                          "sequences, more than its data plans ({}): give the mixture headroom (a larger scale or "
                          "total_tokens) or use spike.policy = \"skip\"",
                          spike_step, step_, to - from, needed, data_->capacity());
  record_skipped(from, to - from);
  data_offset_steps_ = new_offset;
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
                                {"data_offset_steps", data_offset_steps_}});
  }
  if (is_root())
    fmt::print(stderr, "# rollback: back to step {} ({}); data resumes after the spike's (data step {})\n", step_,
               latest.value(), data_step());
  return Status::ok();
}

}  // namespace mt
