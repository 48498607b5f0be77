// checkpoint_run.h — the shape every command that trains on from a
// checkpoint shares (`sft`, `rl`, `distill`): the run flags (--run-dir,
// --set, --resume, --move-aside, --no-progress, --stop-at, --heartbeat,
// --inject-fault), and the run itself: --resume continues the run in
// --run-dir with its saved config.toml; otherwise the command's inputs build
// a config from the checkpoint; the trainer's limits are checked and the run
// goes to run_training (cli/train_run.h).
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "cli/train_run.h"
#include "core/status.h"
#include "train/run_config.h"

namespace mt {

// `what` names the run in --set's and --resume's help ("fine-tuning", "reinforcement-learning", ...);
// `inputs` the flags --resume makes unnecessary ("--init and --data").
void add_checkpoint_run_flags(CLI::App* sub, TrainArgs& a, const std::string& what, const std::string& inputs);

struct CheckpointRun {
  std::string cmd;  // "sft", "rl", "distill"
  bool inputs_given = false;
  std::string missing;                      // the usage message when they are not: "give --init CKPT and --data FILE"
  std::function<Result<RunConfig>()> make;  // the config from the checkpoint and the inputs
};

ExitCode run_from_checkpoint(const CheckpointRun& r, const TrainArgs& a);

}  // namespace mt
