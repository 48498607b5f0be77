// cmd_sweep.cpp — `moetrain sweep SWEEP.toml --out DIR --jobs N`: the
// cost-aware hyperparameter search (sweep/runner/sweep_run.h). docs/sweep.md.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/claim_out.h"
#include "cli/commands.h"
#include "core/file_io.h"
#include "sweep/runner/sweep_run.h"

namespace mt {
namespace {

struct SweepArgs {
  std::string sweep, out = "runs/sweep";
  std::vector<std::string> sets;
  bool no_progress = false, move_aside = false;
  int64_t jobs = 1;
};

ExitCode run_sweep_command(const SweepArgs& a) {
  auto cfg = load_sweep_config(a.sweep, a.sets);
  if (!cfg) {
    fmt::print(stderr, "moetrain sweep: {}\n", cfg.status().message());
    return ExitCode::kUsage;
  }
  auto plan = plan_sweep(cfg.value(), a.out);
  if (!plan) return fail("sweep", plan.status(), ExitCode::kUsage);
  if (auto refused = claim_out("sweep", a.out, sweep_owner(cfg.value(), plan.value()), a.move_aside)) return *refused;
  SweepOptions opt;
  opt.jobs = a.jobs;
  opt.progress = !a.no_progress;
  auto front = run_sweep(cfg.value(), plan.value(), opt);
  if (!front) {
    fmt::print(stderr, "moetrain sweep: {}\n", front.status().message());
    return ExitCode::kFailed;
  }
  // The front, cheapest first, and each hyperparameter's power law along it.
  auto text = read_file(front.value(), "front");
  if (text) {
    const nlohmann::json f = nlohmann::json::parse(text.value());
    fmt::print("front ({} runs, {} failed):\n", f["runs"].size(), f["failed_runs"].get<int64_t>());
    for (const auto& r : f["runs"])
      fmt::print("  {}  cost {:.3e}  loss {:.4f}  {}\n", r["name"].get<std::string>(), r["cost"].get<double>(),
                 r["value"].get<double>(), r["settings"].dump());
    for (const auto& [k, s] : f["scaling"].items())
      if (!s["exponent"].is_null()) {
        const auto& iv = s["interval"];
        fmt::print("  {} ~ cost^{:.3f}, 90% interval [{:.3f}, {:.3f}] (R^2 {:.2f}, {} runs)\n", k,
                   s["exponent"].get<double>(), iv[0].is_number() ? iv[0].get<double>() : NAN,
                   iv[1].is_number() ? iv[1].get<double>() : NAN, s["r2"].is_null() ? NAN : s["r2"].get<double>(),
                   s["runs"].get<int64_t>());
      }
  }
  fmt::print("{}\n", front.value());
  return ExitCode::kOk;
}

}  // namespace

void register_sweep(CLI::App& app, CommandAction& run) {
  auto a = std::make_shared<SweepArgs>();
  CLI::App* sub = app.add_subcommand(
      "sweep", "Cost-aware hyperparameter search (CARBS): runs around the loss/cost front, resumable");
  sub->add_option("sweep", a->sweep, "Sweep file (TOML, docs/sweep.md)")->required();
  sub->add_option("--out", a->out, "Run directories, results.jsonl and front.json")->capture_default_str();
  sub->add_option("--set", a->sets, "Override a sweep key: KEY=VALUE (e.g. sweep.runs=32)");
  sub->add_option("--jobs", a->jobs,
                  "Runs trained at once, as separate processes sharing the machine's threads (results do not "
                  "depend on it)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  sub->add_flag("--no-progress", a->no_progress, "No live progress line");
  sub->add_flag("--move-aside", a->move_aside,
                "OUT holds another sweep (or other files): rename it to OUT.prev-N and start afresh");
  sub->callback([a, &run] { run = [a] { return run_sweep_command(*a); }; });
}

}  // namespace mt
