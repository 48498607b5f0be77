// cmd_distill.cpp — `moetrain distill --init STUDENT --teacher CKPT --tasks
// FILE --run-dir DIR`: on-policy distillation of a checkpoint toward a
// teacher on task prompts (the student samples, the teacher scores every
// sampled position over the vocabulary, the loss is the reverse KL), or one
// of its off-policy baselines on the teacher's samples (--mode forward_kl,
// sft). The run is an `rl` run with rl.objective and rl.teacher set
// (train/rl_feed.h, train/rl_run_config.h), run by cli/train_run.h exactly
// as `train` runs a pretraining config.
#include <fmt/format.h>

#include <filesystem>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/train_run.h"
#include "rundir/run_dir.h"
#include "train/rl_run_config.h"
#include "train/trainer.h"

namespace mt {

void register_distill(CLI::App& app, CommandAction& run) {
  struct RlArgs {
    TrainArgs train;
    RlRequest req;
  };
  auto a = std::make_shared<RlArgs>();
  a->train.run_dir = "runs/distill";
  auto mode = std::make_shared<std::string>("on_policy");
  CLI::App* sub = app.add_subcommand(
      "distill",
      "On-policy distillation of a checkpoint toward a teacher (reverse KL on the student's samples), or "
      "its off-policy baselines.");
  sub->add_option("--init", a->req.init,
                  "Checkpoint or run directory (its newest checkpoint) of the student: its weights, with fresh "
                  "optimizer state; its config gives the model and the defaults");
  sub->add_option("--teacher", a->req.teacher,
                  "Checkpoint or run directory of the teacher (any size, the same tokenizer), e.g. a cooldown "
                  "branch of a ladder's largest rung; its parameters' hash is recorded in the run");
  sub->add_option("--mode", *mode,
                  "on_policy: the student samples, reverse KL to the teacher over the vocabulary at every sampled "
                  "position; forward_kl: the teacher samples, forward KL to its distribution (knowledge "
                  "distillation); sft: the teacher samples, cross-entropy on its tokens")
      ->capture_default_str()
      ->check(CLI::IsMember({"on_policy", "forward_kl", "sft"}));
  sub->add_option("--tasks", a->req.tasks,
                  "Task items, JSONL ({\"prompt\", \"answer\", \"family\"}, `moetrain tasks make`): the prompts "
                  "sampled (their answers score the samples' accuracy, reported, not trained on)");
  sub->add_option("--held-out", a->req.held_out,
                  "Held-out task items: greedy pass@1 and pass@k (rl.eval_k samples) at the start and every "
                  "train.eval_every steps");
  sub->add_option("--run-dir", a->train.run_dir, "Where metrics.jsonl and checkpoints/ go")->capture_default_str();
  sub->add_option("--set", a->train.sets,
                  "Override a key of the run: section.key=value (repeatable; rl.group_size (samples per prompt), "
                  "rl.max_new_tokens, rl.temperature, train.lr, train.steps, ...)");
  sub->add_flag("--resume", a->train.resume,
                "Continue the run in --run-dir from its newest valid checkpoint (its rollout buffer included), "
                "with its saved config.toml (--init and --tasks are not needed)");
  sub->add_flag("--move-aside", a->train.move_aside,
                "Start a new run even if --run-dir holds one: the old run is renamed to RUN_DIR.prev-N");
  sub->add_flag("--no-progress", a->train.no_progress, "No live progress line");
  sub->add_option("--stop-at", a->train.stop_at, "Stop after this step with a checkpoint, as if interrupted");
  sub->add_option("--heartbeat", a->train.heartbeat, "Supervised runs (moetrain supervise sets it)");
  sub->add_option("--inject-fault", a->train.inject_fault, "Testing only: KIND:RANK:STEP, as `train` takes it");
  sub->callback([a, mode, &run] {
    run = [a, mode]() -> ExitCode {
      RlArgs& s = *a;
      if (s.train.resume && s.train.move_aside) {
        fmt::print(stderr, "moetrain distill: --resume and --move-aside exclude each other\n");
        return ExitCode::kUsage;
      }
      s.req.sets = s.train.sets;
      s.req.objective = *mode == "forward_kl" ? RlObjective::kForwardKl
                        : *mode == "sft"      ? RlObjective::kTeacherSft
                                              : RlObjective::kReverseKl;
      std::error_code ec;
      const bool saved = std::filesystem::exists(saved_config_path(s.train.run_dir), ec);
      Result<RunConfig> cfg = Status::error("");
      if (s.train.resume && saved) {
        cfg = load_run_config(saved_config_path(s.train.run_dir), s.train.sets);
      } else if (s.req.init.empty() || s.req.tasks.empty() || s.req.teacher.empty()) {
        fmt::print(stderr,
                   "moetrain distill: give --init STUDENT, --teacher CKPT and --tasks FILE (or --resume a run)\n");
        return ExitCode::kUsage;
      } else {
        cfg = make_rl_config(s.req);
      }
      if (cfg) {
        Status limits = check_trainer_limits(cfg.value());
        if (!limits) cfg = limits;
      }
      if (!cfg) {
        fmt::print(stderr, "moetrain distill: {}\n", cfg.status().message());
        return ExitCode::kUsage;
      }
      return run_training("distill", cfg.value(), s.train);
    };
  });
}

}  // namespace mt
