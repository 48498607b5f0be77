// cmd_ckpt.cpp — `moetrain ckpt inspect CKPT_DIR [--json]`: validates a
// checkpoint and prints its step, tensor hash and tensor table.
// `moetrain ckpt branch FROM RUN_DIR`: a new run directory that continues
// FROM with `train --resume` (train/run_branch.h).
#include <fmt/format.h>

#include "ckpt/checkpoint.h"
#include "cli/commands.h"
#include "train/run_branch.h"

namespace mt {

void register_ckpt(CLI::App& app, CommandAction& run) {
  auto dir = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand("ckpt", "Checkpoint tools.");
  sub->require_subcommand(1);
  CLI::App* inspect = sub->add_subcommand("inspect", "Validate a checkpoint and print its summary.");
  inspect->add_option("dir", *dir, "Checkpoint directory (step_XXXXXXXX), or a run directory (its newest checkpoint)")
      ->required();
  inspect->add_flag("--json", *as_json, "Print JSON");
  inspect->callback([dir, as_json, &run] {
    run = [dir, as_json]() -> ExitCode {
      auto resolved = resolve_checkpoint_dir(*dir);  // as generate, eval and export take it
      auto info = resolved ? inspect_checkpoint(resolved.value()) : Result<nlohmann::json>(resolved.status());
      if (!info) {
        fmt::print(stderr, "moetrain ckpt inspect: {}\n", info.status().message());
        return ExitCode::kFailed;
      }
      const auto& j = info.value();
      if (*as_json) {
        fmt::print("{}\n", j.dump(2));
        return ExitCode::kOk;
      }
      fmt::print("checkpoint {}\nstep        {}\ntensor_hash {}\ntensors     {}\n", *dir, j["step"].get<int64_t>(),
                 j["tensor_hash"].get<std::string>(), j["tensors"].size());
      for (const auto& t : j["tensors"]) fmt::print("  {:<48} {}\n", t["name"].get<std::string>(), t["shape"].dump());
      return ExitCode::kOk;
    };
  });

  auto from = std::make_shared<std::string>();
  auto to = std::make_shared<std::string>();
  CLI::App* branch = sub->add_subcommand(
      "branch",
      "Start a run directory as a copy of a run at one checkpoint (the checkpoint, its config, the metrics through "
      "its step), to continue with `train --run-dir RUN_DIR --resume` under a changed config: a branch at a phase's "
      "end (docs/training.md)");
  branch->add_option("from", *from, "Checkpoint directory (step_XXXXXXXX), or a run directory (its newest checkpoint)")
      ->required();
  branch->add_option("run_dir", *to, "The new run directory (absent or empty)")->required();
  branch->callback([from, to, &run] {
    run = [from, to]() -> ExitCode {
      auto b = branch_run(*from, *to);
      if (!b) {
        fmt::print(stderr, "moetrain ckpt branch: {}\n", b.status().message());
        return ExitCode::kFailed;
      }
      fmt::print("{}: a branch of {} at step {}; continue it with moetrain train --run-dir {} --resume\n", *to,
                 b->checkpoint, b->step, *to);
      return ExitCode::kOk;
    };
  });
}

}  // namespace mt
