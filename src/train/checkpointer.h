// checkpointer.h — a run's checkpoints, in two halves so training never
// waits for the disk. start(): rank 0 stages the directory, every rank
// snapshots its tensors (a copy the next steps cannot touch, or, on a disk
// store, the mappings themselves, written at once) and writes its shard file
// in the background. finish() (every rank at the same point: collective)
// waits for the writers and has rank 0 commit once every shard is written.
// A crash before the commit leaves the previous checkpoint the newest valid
// one; one process runs the same protocol as a world of one (ckpt/checkpoint.h).
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "comm/comm.h"
#include "core/status.h"

namespace mt {

// kBackground: snapshot to memory, write on a thread, commit a step later
// (train.async_checkpoint); kNow: write and commit inside start() (a disk
// store is written from its mappings, without a host-memory copy).
enum class CheckpointWrite { kBackground, kNow };

struct CheckpointerOptions {
  std::string run_dir;      // checkpoints go to RUN_DIR/checkpoints; commits are logged in events.jsonl
  std::string config_toml;  // the resolved config, saved in every manifest
  int64_t keep_last = 3;    // committed checkpoints kept
  CheckpointWrite write = CheckpointWrite::kBackground;
};

class Checkpointer {
 public:
  Checkpointer(Comm& world, CheckpointerOptions opt);
  ~Checkpointer();

  // Finishes the pending checkpoint, then starts one of `views` (this rank's
  // pieces of the saved tensors) taken after `step`; `state` (step, data
  // position, ...) goes into its manifest. Collective.
  Status start(int64_t step, const std::vector<TensorView>& views, const nlohmann::json& state);
  // Commits the pending checkpoint once every rank's writer is done; does
  // nothing while any is still writing. Collective (one flag reduced over
  // the ranks, so all decide alike).
  Status finish_if_written();
  // Waits for the pending checkpoint, if any, and commits it. Collective.
  Status finish();

  bool background() const { return opt_.write == CheckpointWrite::kBackground; }
  struct Stats {
    int64_t commits = 0;
    double blocking_s = 0;  // main-thread time in checkpoints
    double write_s = 0;     // snapshot-to-commit time, summed
  };
  const Stats& stats() const { return stats_; }

 private:
  struct Pending;
  Comm& world_;
  CheckpointerOptions opt_;
  std::unique_ptr<Pending> pending_;
  Stats stats_;
};

}  // namespace mt
