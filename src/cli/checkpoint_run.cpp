// checkpoint_run.cpp — see checkpoint_run.h.
#include "cli/checkpoint_run.h"

#include <fmt/format.h>

#include <filesystem>

#include "rundir/run_dir.h"
#include "train/trainer.h"

namespace mt {

void add_checkpoint_run_flags(CLI::App* sub, TrainArgs& a, const std::string& what, const std::string& inputs) {
  sub->add_option("--run-dir", a.run_dir, "Where metrics.jsonl and checkpoints/ go")->capture_default_str();
  sub->add_option("--set", a.sets,
                  "Override a key of the " + what +
                      " config: section.key=value (repeatable; train.lr, train.steps, train.batch_size, ...)");
  sub->add_flag("--resume", a.resume,
                "Continue the " + what +
                    " run in --run-dir from its newest valid checkpoint, with its saved "
                    "config.toml (" +
                    inputs + " are not needed)");
  sub->add_flag("--move-aside", a.move_aside,
                "Start a new run even if --run-dir holds one: the old run is renamed to RUN_DIR.prev-N");
  sub->add_flag("--no-progress", a.no_progress, "No live progress line");
  sub->add_option("--stop-at", a.stop_at, "Stop after this step with a checkpoint, as if interrupted");
  sub->add_option("--heartbeat", a.heartbeat, "Supervised runs (moetrain supervise sets it)");
  sub->add_option("--inject-fault", a.inject_fault, "Testing only: KIND:RANK:STEP, as `train` takes it");
}

ExitCode run_from_checkpoint(const CheckpointRun& r, const TrainArgs& a) {
  if (a.resume && a.move_aside) {
    fmt::print(stderr, "moetrain {}: --resume and --move-aside exclude each other\n", r.cmd);
    return ExitCode::kUsage;
  }
  std::error_code ec;
  const bool saved = std::filesystem::exists(saved_config_path(a.run_dir), ec);
  Result<RunConfig> cfg = Status::error("");
  if (a.resume && saved) {
    cfg = load_run_config(saved_config_path(a.run_dir), a.sets);
  } else if (!r.inputs_given) {
    fmt::print(stderr, "moetrain {}: {} (or --resume a run)\n", r.cmd, r.missing);
    return ExitCode::kUsage;
  } else {
    cfg = r.make();
  }
  if (cfg) {
    Status limits = check_trainer_limits(cfg.value());
    if (!limits) cfg = limits;
  }
  if (!cfg) {
    fmt::print(stderr, "moetrain {}: {}\n", r.cmd, cfg.status().message());
    return ExitCode::kUsage;
  }
  return run_training(r.cmd, cfg.value(), a);
}

}  // namespace mt
