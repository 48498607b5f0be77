// cmd_mix.cpp — `moetrain mix search MIX.toml --out DIR [--jobs N]`: the
// mixture search (src/mix/runner/mix_search.h). Exit 2 for a bad search file
// or --set, 1 when the search cannot plan, train, fit or write.
#include <fmt/format.h>

#include <memory>

#include "cli/claim_out.h"
#include "cli/commands.h"
#include "mix/runner/mix_search.h"

namespace mt {

void register_mix(CLI::App& app, CommandAction& run) {
  CLI::App* mix = app.add_subcommand("mix", "Data mixtures: search the mixture with small proxy runs.");
  mix->require_subcommand(1);
  struct MixArgs {
    std::string file, out = "runs/mix";
    std::vector<std::string> sets;
    int64_t jobs = 1;
    bool no_progress = false, move_aside = false;
  };
  auto a = std::make_shared<MixArgs>();
  CLI::App* search = mix->add_subcommand(
      "search",
      "Sample mixtures around the natural shares (no data repeated at the hero scale), train a proxy on each, fit "
      "log-linear and XGBoost regressors, check their held-out rank correlation, write the predicted best mixture "
      "(resumable).");
  search->add_option("file", a->file, "Mixture search file (TOML, docs/mix.md)")->required();
  search->add_option("--out", a->out, "Proxy run directories, proxies.jsonl, search.json, best-mixture.toml, report.html")
      ->capture_default_str();
  search->add_option("--set", a->sets, "Override a search key: KEY=VALUE (e.g. search.proxies=32)");
  search->add_option("--jobs", a->jobs,
                     "Proxies trained at once, as separate processes sharing the machine's threads (results do not "
                     "depend on it)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  search->add_flag("--no-progress", a->no_progress, "No live progress line");
  search->add_flag(
      "--move-aside", a->move_aside,
      "OUT holds another configuration's search (or other files): rename it to OUT.prev-N and start afresh");
  search->callback([a, &run] {
    run = [a]() -> ExitCode {
      auto cfg = load_mix_search_config(a->file, a->sets);
      if (!cfg) {
        fmt::print(stderr, "moetrain mix search: {}\n", cfg.status().message());
        return ExitCode::kUsage;
      }
      // Planned and checked before OUT is touched: a refused search leaves nothing.
      auto plan = plan_mix_search(cfg.value(), a->out);
      if (!plan) return fail("mix search", plan.status(), ExitCode::kUsage);
      if (auto refused = claim_out("mix search", a->out, mix_search_owner(plan.value()), a->move_aside))
        return *refused;
      MixSearchOptions opt;
      opt.jobs = a->jobs;
      opt.progress = !a->no_progress;
      auto best = run_mix_search(cfg.value(), plan.value(), opt);
      if (!best) {
        fmt::print(stderr, "moetrain mix search: {}\n", best.status().message());
        return ExitCode::kFailed;
      }
      fmt::print("{}\n", best.value());
      return ExitCode::kOk;
    };
  });
}

}  // namespace mt
