// cmd_rl.cpp — `moetrain rl --init CKPT --tasks FILE --run-dir DIR`:
// reinforcement learning of a checkpoint on task items with verifiable
// answers, GRPO (train/rl_feed.h; train/rl_run_config.h builds the run
// config, cli/train_run.h runs it exactly as `train` runs a pretraining
// config: under mpirun, supervise, kill and --resume alike).
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/checkpoint_run.h"
#include "train/rl_run_config.h"

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
  add_checkpoint_run_flags(sub, a->train, "reinforcement-learning", "--init and --tasks");
  sub->callback([a, &run] {
    run = [a]() -> ExitCode {
      a->req.sets = a->train.sets;
      return run_from_checkpoint({"rl", !a->req.init.empty() && !a->req.tasks.empty(),
                                  "give --init CKPT and --tasks FILE", [a] { return make_rl_config(a->req); }},
                                 a->train);
    };
  });
}

}  // namespace mt
