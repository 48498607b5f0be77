// cmd_train.cpp — `moetrain train [--config FILE] [--run-dir DIR] [--set k=v]... [--resume]`.
// Without --config it trains the embedded quickstart preset.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/embedded_configs.h"
#include "train/run_config.h"
#include "train/trainer.h"

namespace mt {

void register_train(CLI::App& app, CommandAction& run) {
  struct Args {
    std::string config, run_dir = "runs/quickstart", preset;
    std::vector<std::string> sets;
    bool resume = false, no_progress = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand("train", "Train a model (single process).");
  sub->add_option("--config", args->config, "TOML config file (default: the embedded quickstart preset)");
  sub->add_option("--preset", args->preset, "Embedded preset instead of a file, e.g. quickstart, bench/tiny");
  sub->add_option("--run-dir", args->run_dir, "Where metrics.jsonl and checkpoints/ go")->capture_default_str();
  sub->add_option("--set", args->sets, "Override a config key: section.key=value (repeatable)");
  sub->add_flag("--resume", args->resume, "Continue from the newest valid checkpoint in the run dir");
  sub->add_flag("--no-progress", args->no_progress, "No live progress line");
  sub->callback([args, &run] {
    run = [args]() -> int {
      Result<RunConfig> cfg = Status::ok();
      if (!args->config.empty()) {
        cfg = load_run_config(args->config, args->sets);
      } else {
        const std::string name = args->preset.empty() ? "quickstart" : args->preset;
        const EmbeddedConfig* e = find_embedded_config(name);
        if (!e) {
          fmt::print(stderr, "moetrain train: no embedded preset '{}'\n", name);
          return 2;
        }
        cfg = parse_run_config(e->text, "<embedded " + name + ".toml>", args->sets);
      }
      if (!cfg) {
        fmt::print(stderr, "moetrain train: {}\n", cfg.status().message());
        return 2;
      }
      TrainerOptions opt;
      opt.run_dir = args->run_dir;
      opt.resume = args->resume;
      opt.progress = !args->no_progress;
      auto trainer = Trainer::create(cfg.value(), opt);
      if (!trainer) {
        fmt::print(stderr, "moetrain train: {}\n", trainer.status().message());
        return 1;
      }
      Status s = trainer.value()->run();
      if (!s) {
        fmt::print(stderr, "moetrain train: {}\n", s.message());
        return 1;
      }
      fmt::print(stderr, "# done: step {}, state hash {}, metrics in {}/metrics.jsonl\n",
                 trainer.value()->step(), trainer.value()->state_hash(), args->run_dir);
      return 0;
    };
  });
}

}  // namespace mt
