// train_run.h — one training run from a resolved config, as `moetrain train`
// runs it and `moetrain sft` does too: the world (MPI or one process), the
// run directory's mode, fault injection, --stop-at, the stop signals, and the
// exit code.
#pragma once
#include <string>
#include <vector>

#include "cli/exit_code.h"
#include "train/run_config.h"

namespace mt {

struct TrainArgs {
  std::string config, run_dir = "runs/quickstart", preset;
  std::vector<std::string> sets;
  std::string inject_fault;
  std::string stop_at;
  std::string heartbeat;
  bool resume = false, no_progress = false, move_aside = false;
};

// `cmd` names the command in messages ("train", "sft").
ExitCode run_training(const std::string& cmd, const RunConfig& config, const TrainArgs& a);

}  // namespace mt
