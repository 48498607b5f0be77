// trainer_checkpoint.cpp — what a training checkpoint holds: every parameter
// under its global name, AdamW moments as adam_m.<name> / adam_v.<name>, the
// aux-loss-free router biases, and in `state` the step, seed and data
// position. Restoring checks that the saved config is compatible.
#include <fmt/format.h>

#include <filesystem>

#include "ckpt/checkpoint.h"
#include "train/trainer.h"

namespace mt {

namespace {
std::string ckpt_root(const std::string& run_dir) { return run_dir + "/checkpoints"; }

// Keys that may differ between the saved and the resuming config.
RunConfig normalised(RunConfig c) {
  c.train.steps = 0;
  c.train.checkpoint_every = 0;
  c.train.keep_checkpoints = 0;
  c.train.log_every = 0;
  c.train.threads = 0;
  c.source.clear();
  return c;
}
}  // namespace

Result<std::string> find_latest_checkpoint_dir(const std::string& run_dir) {
  std::error_code ec;
  if (!std::filesystem::exists(ckpt_root(run_dir), ec)) return Status::error("no checkpoints");
  return find_latest_checkpoint(ckpt_root(run_dir));
}

bool has_committed_checkpoints(const std::string& run_dir) {
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(ckpt_root(run_dir), ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    if (it->path().filename().string().starts_with("step_")) return true;
  return false;
}

Status Trainer::save_checkpoint() {
  std::vector<TensorView> views;
  const ParamLayout& L = model_->layout();
  for (const ParamEntry& e : L.entries()) {
    views.push_back({e.name, e.shape, params_.data() + e.offset});
    views.push_back({"adam_m." + e.name, e.shape, optim_->m().data() + e.offset});
    views.push_back({"adam_v." + e.name, e.shape, optim_->v().data() + e.offset});
  }
  if (!router_bias_.empty())
    views.push_back({"router_bias", {int64_t(router_bias_.size())}, router_bias_.data()});
  nlohmann::json state;
  state["step"] = step_;
  state["seed"] = cfg_.train.seed;
  state["data"] = {{"next_sequence", step_ * cfg_.train.grad_accum * cfg_.train.batch_size},
                   {"source", data_->describe()}};
  state["rng"] = {{"kind", "philox4x32-10"}, {"seed", cfg_.train.seed}, {"init_stream", "xxh64(tensor name)"}};
  return write_checkpoint(ckpt_root(opt_.run_dir), step_, views, to_toml(cfg_), state,
                          cfg_.train.keep_checkpoints);
}

Status Trainer::restore(const std::string& dir) {
  auto loaded = read_checkpoint(dir);
  if (!loaded) return loaded.status();
  const LoadedCheckpoint& ck = loaded.value();
  auto saved = parse_run_config(ck.config_toml, dir + "/manifest.json", {});
  if (!saved) return saved.status();
  if (to_toml(normalised(saved.value())) != to_toml(normalised(cfg_)))
    return Status::errorf(
        "{}: checkpoint was written with a different config (only train.steps, checkpoint_every, "
        "keep_checkpoints, log_every and threads may change on resume); saved config:\n{}",
        dir, ck.config_toml);
  const ParamLayout& L = model_->layout();
  for (const ParamEntry& e : L.entries()) {
    MT_RETURN_IF_ERROR(load_into(ck, e.name, e.shape, params_.data() + e.offset));
    MT_RETURN_IF_ERROR(load_into(ck, "adam_m." + e.name, e.shape, optim_->m().data() + e.offset));
    MT_RETURN_IF_ERROR(load_into(ck, "adam_v." + e.name, e.shape, optim_->v().data() + e.offset));
  }
  if (!router_bias_.empty())
    MT_RETURN_IF_ERROR(load_into(ck, "router_bias", {int64_t(router_bias_.size())}, router_bias_.data()));
  step_ = ck.state.value("step", int64_t(-1));
  if (step_ != ck.step) return Status::errorf("{}: manifest step {} and state step {} differ", dir, ck.step, step_);
  fmt::print(stderr, "# resumed from {} (step {})\n", dir, step_);
  return Status::ok();
}

}  // namespace mt
