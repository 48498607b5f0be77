// cmd_sft.cpp — `moetrain sft --init CKPT --data FILE --run-dir DIR`:
// supervised fine-tuning of a checkpoint on examples (train/sft_config.h
// builds the run config, cli/train_run.h runs it exactly as `train` runs a
// pretraining config: under mpirun, supervise, kill and --resume alike).
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/checkpoint_run.h"
#include "train/sft_config.h"

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
  add_checkpoint_run_flags(sub, a->train, "fine-tuning", "--init and --data");
  sub->callback([a, &run] {
    run = [a]() -> ExitCode {
      a->req.sets = a->train.sets;
      return run_from_checkpoint({"sft", !a->req.init.empty() && !a->req.data.empty(),
                                  "give --init CKPT and --data FILE", [a] { return make_sft_config(a->req); }},
                                 a->train);
    };
  });
}

}  // namespace mt
