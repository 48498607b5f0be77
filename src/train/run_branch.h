// run_branch.h — a run directory that starts as another run at one of its
// checkpoints: the checkpoint, the config it was written under, and the
// metrics through its step. `moetrain train --resume` there continues the
// run under a config changed as docs/training.md allows: a branch at a
// phase's end (RoPE scaling for a context extension), a ladder rung's
// cooldown branch. The source run is only read.
#pragma once
#include <cstdint>
#include <string>

#include "core/status.h"

namespace mt {

struct RunBranch {
  std::string checkpoint;  // the source checkpoint, resolved
  int64_t step = 0;
};

// `from` is what every checkpoint reader takes (a checkpoint, a run directory
// for its newest valid checkpoint, or a run's checkpoints/). The checkpoint
// is verified before it is copied; `to_run_dir` must be absent or empty
// (a branch never overwrites a run). Built under TO.tmp and renamed, so a
// kill leaves either no branch or a whole one.
Result<RunBranch> branch_run(const std::string& from, const std::string& to_run_dir);

}  // namespace mt
