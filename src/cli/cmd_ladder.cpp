// cmd_ladder.cpp — `moetrain ladder fit RESULTS [options]`: fits L(N, D) to a
// scaling ladder's finished runs (src/ladder/), prints the law with bootstrap
// errors, the isoFLOP fit when the data allow it and the projections asked
// for; --out writes the JSON fit file (docs/ladder.md). Exit 2 for bad input
// (file, field or option), 1 when the fit file cannot be written.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "cli/claim_out.h"
#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "core/file_io.h"
#include "core/file_lock.h"
#include "ladder/fit_html.h"
#include "ladder/runner/ladder_run.h"
#include "ladder/analysis.h"
#include "ladder/fit_report.h"

namespace mt {
namespace {

struct LadderFitArgs {
  std::string results, n = "active", sparsity_g = "total-over-active", out, html;
  bool sparsity_term = false, json = false;
  double huber_delta = 1e-3, level = 0.95;
  int64_t bootstrap = 200, drop = 0;
  uint64_t seed = 0;
  double target_params = 0, target_tokens = 0, target_flops = 0, tokens_per_param = 0, target_sparsity = 0;
  std::vector<std::string> chance, hold_out;
};

// "TASK=P" pairs into task -> chance accuracy.
Result<std::map<std::string, double>> parse_chance(const std::vector<std::string>& items) {
  std::map<std::string, double> out;
  for (const std::string& s : items) {
    const size_t eq = s.rfind('=');
    char* end = nullptr;
    const double p = eq == std::string::npos ? 0 : std::strtod(s.c_str() + eq + 1, &end);
    if (eq == std::string::npos || eq == 0 || end == s.c_str() + eq + 1 || *end != '\0' || !(p >= 0 && p < 1))
      return Status::errorf("--chance: expected TASK=P with P in [0, 1), got '{}'", s);
    out[s.substr(0, eq)] = p;
  }
  return out;
}

ExitCode run_ladder_fit(const LadderFitArgs& args) {
  auto fail = [](const Status& s) {
    fmt::print(stderr, "moetrain ladder fit: {}\n", s.message());
    return ExitCode::kUsage;
  };
  ladder::LadderOptions opt;
  opt.param_count = args.n == "total" ? ladder::ParamCount::kTotal : ladder::ParamCount::kActive;
  if (args.sparsity_term)
    opt.sparsity = args.sparsity_g == "n-experts" ? ladder::Sparsity::kExperts : ladder::Sparsity::kTotalOverActive;
  opt.fit.huber_delta = args.huber_delta;
  opt.drop_highest_loss = args.drop;
  opt.bootstrap = {args.bootstrap, args.seed, args.level};
  opt.hold_out = args.hold_out;
  opt.target = {args.target_params, args.target_tokens, args.target_flops, args.tokens_per_param, args.target_sparsity};
  auto chance = parse_chance(args.chance);
  if (!chance) return fail(chance.status());
  opt.chance = *chance;

  auto runs = ladder::load_results(args.results);
  if (!runs) return fail(runs.status());
  auto analysis = ladder::analyze(*runs, opt);
  if (!analysis) return fail(analysis.status());

  const nlohmann::json j = ladder::to_json(*analysis);
  if (!args.out.empty()) {
    Status w = write_file_atomic(args.out, j.dump(2) + "\n");
    if (!w) {
      fmt::print(stderr, "moetrain ladder fit: --out: {}\n", w.message());
      return ExitCode::kFailed;
    }
  }
  if (!args.html.empty()) {
    Status w = write_file_atomic(args.html, ladder::fit_html(*analysis, args.results));
    if (!w) {
      fmt::print(stderr, "moetrain ladder fit: --html: {}\n", w.message());
      return ExitCode::kFailed;
    }
  }
  if (args.json)
    fmt::print("{}\n", j.dump(2));
  else
    fmt::print("{}", ladder::to_text(*analysis, args.results));
  return ExitCode::kOk;
}

}  // namespace

void register_ladder(CLI::App& app, CommandAction& run) {
  CLI::App* ladder = app.add_subcommand("ladder", "Scaling ladders: fit L(N, D) to finished runs and project.");
  ladder->require_subcommand(1);

  auto a = std::make_shared<LadderFitArgs>();
  CLI::App* fit = ladder->add_subcommand(
      "fit", "Fit L(N, D) = E + A/N^alpha + B/D^beta (Besiroglu et al. 2024 method) with bootstrap errors; project.");
  fit->add_option("results", a->results, "RESULTS file: JSONL (one run per line) or CSV (docs/ladder.md)")->required();
  fit->add_option("--n", a->n, "Which parameter count is N: active or total")
      ->check(CLI::IsMember({"active", "total"}))
      ->capture_default_str();
  fit->add_flag("--sparsity-term", a->sparsity_term,
                "Fit L = E + A/(N_active^alpha G^gamma) + B/D^beta (one more parameter, gamma)");
  fit->add_option("--sparsity-g", a->sparsity_g, "G of the sparsity term: total-over-active or n-experts")
      ->check(CLI::IsMember({"total-over-active", "n-experts"}))
      ->capture_default_str();
  fit->add_option("--huber-delta", a->huber_delta, "Huber threshold on log-loss residuals")
      ->check(positive())
      ->capture_default_str();
  fit->add_option("--bootstrap", a->bootstrap, "Bootstrap resamples for errors and intervals (0: none)")
      ->check(in_range(0, 100000))
      ->capture_default_str();
  fit->add_option("--seed", a->seed, "Bootstrap seed")->capture_default_str();
  fit->add_option("--level", a->level, "Interval level")->check(in_range(0.5, 0.999))->capture_default_str();
  fit->add_option("--drop-highest-loss", a->drop, "Leave out the K runs with the highest loss")
      ->check(non_negative())
      ->capture_default_str();
  CLI::Option* tp =
      fit->add_option("--target-params", a->target_params, "Project a run of N parameters...")->check(positive());
  CLI::Option* tt = fit->add_option("--target-tokens", a->target_tokens, "...trained on D tokens")->check(positive());
  CLI::Option* tf =
      fit->add_option("--target-flops", a->target_flops, "Project at compute C = 6 N D: the compute-optimal split")
          ->check(positive());
  CLI::Option* tr = fit->add_option("--tokens-per-param", a->tokens_per_param,
                                    "With --target-flops: also the split at R tokens per parameter")
                        ->check(positive());
  fit->add_option("--target-sparsity", a->target_sparsity, "G at the target (needed with --sparsity-term)")
      ->check(CLI::Range(1.0, 1e12));
  fit->add_option("--chance", a->chance, "TASK=P: chance accuracy of a task, the sigmoid's floor (repeatable)");
  fit->add_option("--hold-out", a->hold_out,
                  "Leave the run NAME out of the fit and report its predicted loss, interval and error (repeatable)");
  fit->add_flag("--json", a->json, "Print the JSON fit instead of the table");
  fit->add_option("--out", a->out, "Write the JSON fit file here");
  fit->add_option("--html", a->html, "Write an HTML report here (log-log loss vs compute with the fit and projection)");
  tp->needs(tt);
  tt->needs(tp);
  tr->needs(tf);
  tf->excludes(tp);
  fit->callback([a, &run] { run = [a] { return run_ladder_fit(*a); }; });

  struct RunArgs {
    std::string ladder, out = "runs/ladder";
    std::vector<std::string> sets, rungs;
    bool no_progress = false, move_aside = false;
    int64_t jobs = 1;
  };
  auto ra = std::make_shared<RunArgs>();
  CLI::App* lr = ladder->add_subcommand(
      "run", "Train every rung of a ladder (resumable) and write OUT/results.jsonl for `ladder fit`.");
  lr->add_option("ladder", ra->ladder, "Ladder file (TOML, docs/ladder.md)")->required();
  lr->add_option("--out", ra->out, "Rung run directories and results.jsonl")->capture_default_str();
  lr->add_option("--set", ra->sets, "Override a ladder key: KEY=VALUE (e.g. ladder.tokens_per_param=10)");
  lr->add_option("--jobs", ra->jobs,
                 "Runs trained at once, as separate processes sharing the machine's threads (results do not depend "
                 "on it)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  lr->add_option("--rung", ra->rungs,
                 "Train only this rung (its name, or its index from 0: a Slurm job array's SLURM_ARRAY_TASK_ID; "
                 "repeatable); invocations for different rungs may run at once into one OUT "
                 "(scripts/slurm/ladder.sbatch)");
  lr->add_flag("--no-progress", ra->no_progress, "No live progress line");
  lr->add_flag("--move-aside", ra->move_aside,
               "OUT holds another configuration's ladder (or other files): rename it to OUT.prev-N and start afresh");
  lr->callback([ra, &run] {
    run = [ra]() -> ExitCode {
      auto cfg = load_ladder_config(ra->ladder, ra->sets);
      if (!cfg) {
        fmt::print(stderr, "moetrain ladder run: {}\n", cfg.status().message());
        return ExitCode::kUsage;
      }
      // Planned and checked before OUT is touched: a refused ladder leaves nothing.
      auto plan = plan_ladder(cfg.value(), ra->out);
      if (!plan) return fail("ladder run", plan.status(), ExitCode::kUsage);
      auto rungs = select_rungs(cfg.value(), ra->rungs);
      if (!rungs) return fail("ladder run", rungs.status(), ExitCode::kUsage);
      LadderRunOptions opt;
      // One rung of several that may run at once: they take turns to claim
      // OUT and to write its results (a lock file beside OUT: inside, it
      // would be a file the claim does not know).
      std::optional<FileLock> lock;
      if (!ra->rungs.empty()) {
        opt.rungs = *rungs;
        opt.lock = std::filesystem::path(ra->out).lexically_normal().string();
        if (!opt.lock.empty() && opt.lock.back() == '/') opt.lock.pop_back();
        opt.lock += ".lock";
        auto l = FileLock::acquire(opt.lock);
        if (!l) return fail("ladder run", l.status());
        lock.emplace(std::move(l.value()));
      }
      if (auto refused = claim_out("ladder run", ra->out, ladder_owner(plan.value()), ra->move_aside)) return *refused;
      lock.reset();
      opt.progress = !ra->no_progress;
      opt.jobs = ra->jobs;
      auto results = run_ladder(cfg.value(), plan.value(), opt);
      if (!results) {
        fmt::print(stderr, "moetrain ladder run: {}\n", results.status().message());
        return ExitCode::kFailed;
      }
      fmt::print("{}\n", results.value());
      return ExitCode::kOk;
    };
  });
}

}  // namespace mt
