// cmd_distill.cpp — `moetrain distill --init STUDENT --teacher CKPT --tasks
// FILE --run-dir DIR`: on-policy distillation of a checkpoint toward a
// teacher on task prompts (the student samples, the teacher scores every
// sampled position over the vocabulary, the loss is the reverse KL), or one
// of its off-policy baselines on the teacher's samples (--mode forward_kl,
// sft). The run is an `rl` run with rl.objective and rl.teacher set
// (train/rl_feed.h, train/rl_run_config.h), run by cli/train_run.h exactly
// as `train` runs a pretraining config.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/checkpoint_run.h"
#include "train/rl_run_config.h"

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
  add_checkpoint_run_flags(sub, a->train, "distillation", "--init, --teacher and --tasks");
  sub->callback([a, mode, &run] {
    run = [a, mode]() -> ExitCode {
      a->req.objective = *mode == "forward_kl" ? RlObjective::kForwardKl
                         : *mode == "sft"      ? RlObjective::kTeacherSft
                                               : RlObjective::kReverseKl;
      a->req.sets = a->train.sets;
      return run_from_checkpoint(
          {"distill", !a->req.init.empty() && !a->req.tasks.empty() && !a->req.teacher.empty(),
           "give --init STUDENT, --teacher CKPT and --tasks FILE", [a] { return make_rl_config(a->req); }},
          a->train);
    };
  });
}

}  // namespace mt
