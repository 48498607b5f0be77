// cmd_sft.cpp — `moetrain sft --init CKPT --data FILE --run-dir DIR`:
// supervised fine-tuning of a checkpoint on examples (train/sft_config.h
// builds the run config, cli/train_run.h runs it exactly as `train` runs a
// pretraining config: under mpirun, supervise, kill and --resume alike).
#include <fmt/format.h>

#include <filesystem>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/train_run.h"
#include "rundir/run_dir.h"
#include "train/sft_config.h"
#include "train/trainer.h"

namespace mt {

void register_sft(CLI::App& app, CommandAction& run) {
  struct SftArgs {
    TrainArgs train;
    SftRequest req;
  };
  auto a = std::make_shared<SftArgs>();
  a->train.run_dir = "runs/sft";
  CLI::App* sub = app.add_subcommand(
      "sft", "Supervised fine-tuning of a checkpoint: packed examples, the loss on completions only.");
  sub->add_option("--init", a->req.init,
                  "Checkpoint or run directory (its newest checkpoint) to fine-tune: its weights, with fresh "
                  "optimizer state; its config gives the model and the defaults");
  sub->add_option("--data", a->req.data,
                  "Examples, JSONL: {\"prompt\", \"completion\"}, {\"messages\": [{\"role\", \"content\"}, ...]}, "
                  "or task items ({\"prompt\", \"answer\"}, `moetrain tasks make`)");
  sub->add_option("--held-out", a->req.held_out, "Held-out examples (same formats) for the eval passes");
  sub->add_option("--epochs", a->req.epochs, "Passes over --data, each in a new order")
      ->capture_default_str()
      ->check(in_range(1, 1 << 20));
  sub->add_option("--run-dir", a->train.run_dir, "Where metrics.jsonl and checkpoints/ go")->capture_default_str();
  sub->add_option("--set", a->train.sets,
                  "Override a key of the fine-tuning config: section.key=value (repeatable; train.lr, train.steps, "
                  "train.batch_size, ...)");
  sub->add_flag("--resume", a->train.resume,
                "Continue the fine-tuning run in --run-dir from its newest valid checkpoint, with its saved "
                "config.toml (--init and --data are not needed)");
  sub->add_flag("--move-aside", a->train.move_aside,
                "Start a new run even if --run-dir holds one: the old run is renamed to RUN_DIR.prev-N");
  sub->add_flag("--no-progress", a->train.no_progress, "No live progress line");
  sub->add_option("--stop-at", a->train.stop_at, "Stop after this step with a checkpoint, as if interrupted");
  sub->add_option("--heartbeat", a->train.heartbeat, "Supervised runs (moetrain supervise sets it)");
  sub->add_option("--inject-fault", a->train.inject_fault, "Testing only: KIND:RANK:STEP, as `train` takes it");
  sub->callback([a, &run] {
    run = [a]() -> ExitCode {
      SftArgs& s = *a;
      if (s.train.resume && s.train.move_aside) {
        fmt::print(stderr, "moetrain sft: --resume and --move-aside exclude each other\n");
        return ExitCode::kUsage;
      }
      a->req.sets = s.train.sets;
      std::error_code ec;
      const bool saved = std::filesystem::exists(saved_config_path(s.train.run_dir), ec);
      Result<RunConfig> cfg = Status::error("");
      if (s.train.resume && saved) {
        cfg = load_run_config(saved_config_path(s.train.run_dir), s.train.sets);
      } else if (s.req.init.empty() || s.req.data.empty()) {
        fmt::print(stderr, "moetrain sft: give --init CKPT and --data FILE (or --resume a fine-tuning run)\n");
        return ExitCode::kUsage;
      } else {
        cfg = make_sft_config(s.req);
      }
      if (cfg) {
        Status limits = check_trainer_limits(cfg.value());
        if (!limits) cfg = limits;
      }
      if (!cfg) {
        fmt::print(stderr, "moetrain sft: {}\n", cfg.status().message());
        return ExitCode::kUsage;
      }
      return run_training("sft", cfg.value(), s.train);
    };
  });
}

}  // namespace mt
