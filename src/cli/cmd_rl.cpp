// cmd_rl.cpp — `moetrain rl --init CKPT --tasks FILE --run-dir DIR`:
// reinforcement learning of a checkpoint on task items with verifiable
// answers, GRPO (train/rl_feed.h; train/rl_run_config.h builds the run
// config, cli/train_run.h runs it exactly as `train` runs a pretraining
// config: under mpirun, supervise, kill and --resume alike).
#include <fmt/format.h>

#include <filesystem>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/train_run.h"
#include "rundir/run_dir.h"
#include "train/rl_run_config.h"
#include "train/trainer.h"

namespace mt {

void register_rl(CLI::App& app, CommandAction& run) {
  struct RlArgs {
    TrainArgs train;
    RlRequest req;
  };
  auto a = std::make_shared<RlArgs>();
  a->train.run_dir = "runs/rl";
  CLI::App* sub = app.add_subcommand(
      "rl", "Reinforcement learning of a checkpoint with verifiable rewards: GRPO on task items' rollouts.");
  sub->add_option("--init", a->req.init,
                  "Checkpoint or run directory (its newest checkpoint) to start the policy from: its weights, with "
                  "fresh optimizer state; its config gives the model and the defaults");
  sub->add_option("--tasks", a->req.tasks,
                  "Task items, JSONL ({\"prompt\", \"answer\", \"family\"}, `moetrain tasks make`): the prompts "
                  "rolled out, the answers their verifier checks");
  sub->add_option("--held-out", a->req.held_out,
                  "Held-out task items: greedy pass@1 and pass@k (rl.eval_k samples) at the start and every "
                  "train.eval_every steps");
  sub->add_option("--run-dir", a->train.run_dir, "Where metrics.jsonl and checkpoints/ go")->capture_default_str();
  sub->add_option("--set", a->train.sets,
                  "Override a key of the run: section.key=value (repeatable; rl.group_size, rl.passes, "
                  "rl.kl_beta, rl.loss, train.lr, train.steps, ...)");
  sub->add_flag("--resume", a->train.resume,
                "Continue the run in --run-dir from its newest valid checkpoint (its rollout buffer included), "
                "with its saved config.toml (--init and --tasks are not needed)");
  sub->add_flag("--move-aside", a->train.move_aside,
                "Start a new run even if --run-dir holds one: the old run is renamed to RUN_DIR.prev-N");
  sub->add_flag("--no-progress", a->train.no_progress, "No live progress line");
  sub->add_option("--stop-at", a->train.stop_at, "Stop after this step with a checkpoint, as if interrupted");
  sub->add_option("--heartbeat", a->train.heartbeat, "Supervised runs (moetrain supervise sets it)");
  sub->add_option("--inject-fault", a->train.inject_fault, "Testing only: KIND:RANK:STEP, as `train` takes it");
  sub->callback([a, &run] {
    run = [a]() -> ExitCode {
      RlArgs& s = *a;
      if (s.train.resume && s.train.move_aside) {
        fmt::print(stderr, "moetrain rl: --resume and --move-aside exclude each other\n");
        return ExitCode::kUsage;
      }
      s.req.sets = s.train.sets;
      std::error_code ec;
      const bool saved = std::filesystem::exists(saved_config_path(s.train.run_dir), ec);
      Result<RunConfig> cfg = Status::error("");
      if (s.train.resume && saved) {
        cfg = load_run_config(saved_config_path(s.train.run_dir), s.train.sets);
      } else if (s.req.init.empty() || s.req.tasks.empty()) {
        fmt::print(stderr, "moetrain rl: give --init CKPT and --tasks FILE (or --resume a run)\n");
        return ExitCode::kUsage;
      } else {
        cfg = make_rl_config(s.req);
      }
      if (cfg) {
        Status limits = check_trainer_limits(cfg.value());
        if (!limits) cfg = limits;
      }
      if (!cfg) {
        fmt::print(stderr, "moetrain rl: {}\n", cfg.status().message());
        return ExitCode::kUsage;
      }
      return run_training("rl", cfg.value(), s.train);
    };
  });
}

}  // namespace mt
