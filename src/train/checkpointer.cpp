// checkpointer.cpp — see checkpointer.h. Rank 0 stages and commits; every
// rank writes its shard; verdicts travel as strings over the world so that
// every rank returns the same status.
#include "train/checkpointer.h"

#include <fmt/format.h>

#include <future>

#include "core/timer.h"
#include "rundir/events_log.h"

namespace mt {

struct Checkpointer::Pending {
  int64_t step = 0;
  std::string staging;
  nlohmann::json state;
  std::vector<float> copy;  // the snapshot the views point into (background writes)
  std::vector<TensorView> views;
  std::future<Result<ShardFile>> write;
  double started = 0;
};

Checkpointer::Checkpointer(Comm& world, CheckpointerOptions opt) : world_(world), opt_(std::move(opt)) {}

Checkpointer::~Checkpointer() {
  if (pending_ && pending_->write.valid()) pending_->write.wait();  // the writer reads pending_'s buffers
}

Status Checkpointer::start(int64_t step, const std::vector<TensorView>& views, const nlohmann::json& state) {
  MT_RETURN_IF_ERROR(finish());
  const double t0 = now_seconds();
  const bool root = world_.rank() == 0;
  auto p = std::make_unique<Pending>();
  p->step = step;
  p->state = state;
  std::string staging;
  if (root) {
    auto s = begin_checkpoint(run_checkpoints_dir(opt_.run_dir), step);
    staging = s ? "ok:" + s.value() : "error:" + s.status().message();
  }
  staging = world_.allgather_strings(staging, "checkpoint (staging)")[0];
  if (staging.rfind("error:", 0) == 0) return Status::errorf("checkpoint step {}: rank 0: {}", step, staging.substr(6));
  p->staging = staging.substr(3);
  p->views = views;
  for (TensorView& v : p->views)
    if (v.count < 0) {  // a whole-tensor view (router_bias, hyperball_radius) gets its count first
      int64_t numel = 1;
      for (int64_t d : v.shape) numel *= d;
      v.count = numel - v.offset;
    }
  if (background()) {  // snapshot: the views are re-pointed into one copy
    int64_t total = 0;
    for (const TensorView& v : p->views) total += v.count;
    p->copy.resize(size_t(total));
    int64_t at = 0;
    for (TensorView& v : p->views) {
      float* to = p->copy.data() + at;
      copy_view_as_f32(v, to);  // moments held in bf16 are saved widened (exact)
      v.data = to;
      v.data_bf16 = nullptr;
      at += v.count;
    }
  }
  const ShardRank who{world_.rank(), world_.size()};
  Pending* raw = p.get();
  const std::launch how = background() ? std::launch::async : std::launch::deferred;
  p->write = std::async(how, [raw, who] { return write_shard_file(raw->staging, who, raw->views); });
  p->started = t0;
  pending_ = std::move(p);
  stats_.blocking_s += now_seconds() - t0;
  return background() ? Status::ok() : finish();
}

Status Checkpointer::finish_if_written() {
  if (!pending_) return Status::ok();
  int64_t busy = pending_->write.wait_for(std::chrono::seconds(0)) == std::future_status::ready ? 0 : 1;
  world_.allreduce_sum(&busy, 1, "allreduce (checkpoint written?)");
  return busy == 0 ? finish() : Status::ok();
}

Status Checkpointer::finish() {
  if (!pending_) return Status::ok();
  const double t0 = now_seconds();
  const bool root = world_.rank() == 0;
  std::unique_ptr<Pending> p = std::move(pending_);
  auto shard = p->write.get();
  const std::string mine = shard ? "ok:" + shard_to_json(shard.value()).dump() : "error:" + shard.status().message();
  const std::vector<std::string> all = world_.allgather_strings(mine, "checkpoint (shard files)");
  std::string verdict;
  for (size_t r = 0; r < all.size() && verdict.empty(); ++r)
    if (all[r].rfind("error:", 0) == 0) verdict = fmt::format("error:rank {}: {}", r, all[r].substr(6));
  if (root) {
    if (verdict.empty()) {
      std::vector<ShardFile> shards;
      for (const std::string& s : all) {
        auto sf = shard_from_json(nlohmann::json::parse(s.substr(3)));
        if (!sf) {
          verdict = "error:" + sf.status().message();
          break;
        }
        shards.push_back(sf.value());
      }
      if (verdict.empty()) {
        Status c = commit_checkpoint(run_checkpoints_dir(opt_.run_dir), p->step, p->staging, shards, opt_.config_toml,
                                     p->state, opt_.keep_last);
        if (!c) verdict = "error:" + c.message();
        // The run's log says which checkpoint a restart may resume from.
        else
          append_event(opt_.run_dir,
                       {{"event", "checkpoint"}, {"step", p->step}, {"write_s", now_seconds() - p->started}});
      }
    }
    if (!verdict.empty()) abort_checkpoint(p->staging);
  }
  verdict = world_.allgather_strings(root ? verdict : std::string(), "checkpoint (commit)")[0];
  const double now = now_seconds();
  stats_.blocking_s += now - t0;
  stats_.write_s += now - p->started;
  ++stats_.commits;
  if (!verdict.empty()) return Status::errorf("checkpoint step {}: {}", p->step, verdict.substr(6));
  return Status::ok();
}

}  // namespace mt
