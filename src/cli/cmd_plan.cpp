// cmd_plan.cpp — `moetrain plan --model FILE --cluster FILE --layout FILE [--tokens N]
// [--json] [--html OUT] [--set KEY=VALUE]... [--scaling-law NAME|FILE] [--search MODE]`.
// Plans a training run on paper (src/plan/): memory per GPU, step time and
// MFU, days and GPU-hours, failures and goodput, the param:data trade, the
// largest model per NVLink domain. --cluster and --layout also take preset
// names (configs/clusters/NAME.toml, configs/layouts/NAME.toml, compiled in).
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cli/commands.h"
#include "cli/embedded_configs.h"
#include "core/file_io.h"
#include "plan/plan.h"
#include "train/phase_schedule.h"
#include "train/run_config.h"

namespace mt {
namespace {

// "15e12", "1.5e13", "15T", "300B", "2M": a positive token count.
Result<double> parse_tokens(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  std::string suffix = end ? std::string(end) : std::string();
  const std::pair<const char*, double> units[] = {{"", 1.0},  {"k", 1e3},  {"K", 1e3},  {"M", 1e6},
                                                  {"B", 1e9}, {"G", 1e9},  {"T", 1e12}, {"P", 1e15}};
  bool ok = end != s.c_str();
  double mult = 0;
  for (auto [u, m] : units)
    if (suffix == u) mult = m;
  if (!ok || mult == 0 || !std::isfinite(v) || !(v > 0))
    return Status::errorf("--tokens: expected a positive count such as 15e12 or 15T, got '{}'", s);
  return v * mult;
}

// A file, or else a preset compiled into the binary (configs/<dir>/<name>.toml).
Result<std::pair<std::string, std::string>> read_file_or_preset(const std::string& arg, const std::string& dir) {
  if (std::filesystem::is_regular_file(arg)) {
    auto text = read_file(arg, "model file");
    if (!text) return text.status();
    return std::make_pair(*text, arg);
  }
  std::string name = arg;
  if (name.size() > 5 && name.ends_with(".toml")) name.resize(name.size() - 5);
  if (name.rfind(dir + "/", 0) == 0) name = name.substr(dir.size() + 1);
  if (const EmbeddedConfig* e = find_embedded_config(dir + "/" + name))
    return std::make_pair(e->text, "<preset " + dir + "/" + name + ">");
  std::string known;
  for (const auto& c : embedded_configs())
    if (c.name.rfind(dir + "/", 0) == 0) known += (known.empty() ? "" : ", ") + c.name.substr(dir.size() + 1);
  return Status::errorf("{}: no such file, and no preset {}/{} (presets: {})", arg, dir, name, known);
}

// The layout with one phase per phase of a run config: its batch and
// sequence length, and its steps exactly (a ramp as its stretches of steps).
plan::LayoutConfig run_phases_layout(plan::LayoutConfig l, const PhaseSchedule& s) {
  const plan::LayoutSettings base = l;
  l.phases.clear();
  for (const PhaseSpan& span : s.phases()) {
    plan::LayoutPhase ph;
    ph.name = span.name;
    ph.tokens = double(span.tokens());
    ph.ramp_from = span.ramp_from;
    ph.layout = base;
    ph.layout.global_batch = span.global_batch;
    ph.layout.seq_len = span.seq_len;
    for (int64_t i = 0; i < span.steps; ++i) {
      const int64_t b = span.batch_at(i);
      if (ph.batch_steps.empty() || ph.batch_steps.back().first != b) ph.batch_steps.emplace_back(b, 0);
      ++ph.batch_steps.back().second;
    }
    l.phases.push_back(std::move(ph));
  }
  return l;
}

}  // namespace

void register_plan(CLI::App& app, CommandAction& run) {
  struct PlanArgs {
    std::string model, cluster, layout, tokens, html, law = "besiroglu2024", search = "auto";
    bool json = false, no_sweep = false;
    uint64_t seed = 1;
    std::vector<std::string> sets;
  };
  auto args = std::make_shared<PlanArgs>();
  CLI::App* sub = app.add_subcommand(
      "plan", "Plan a training run on paper: memory per GPU, step time, MFU, days, failures, goodput, param:data.");
  sub->add_option("--model", args->model, "Model config (the trainer's TOML file, or a preset such as models/NAME); a run config with "
                  "[[phase]] tables is planned phase by phase, its steps and tokens as the trainer runs them")
      ->required();
  sub->add_option("--cluster", args->cluster, "Cluster file (configs/clusters/*.toml) or preset name (h100, gb200-nvl72, ...)")
      ->required();
  sub->add_option("--layout", args->layout, "Layout file (configs/layouts/*.toml) or preset name")->required();
  sub->add_option("--tokens", args->tokens,
                  "Training tokens: 15e12, 15T, 300B, ... (a --model run config with [[phase]] tables gives its own)");
  sub->add_flag("--json", args->json, "Print one JSON object instead of the table");
  sub->add_option("--html", args->html, "Write a self-contained HTML report to this file");
  sub->add_option("--set", args->sets,
                  "Override a key: model.KEY / train.KEY (model file), cluster.SECTION.KEY, layout.SECTION.KEY "
                  "(repeatable)");
  sub->add_option("--scaling-law", args->law, "L(N, D) fit: besiroglu2024 (default), hoffmann2022, a TOML file with a [fit] table, or FIT.json from `moetrain ladder fit --out`")
      ->capture_default_str();
  sub->add_option("--search", args->search, "Largest model per NVLink domain, varying: auto, layers, experts, none")
      ->check(CLI::IsMember({"auto", "layers", "experts", "none"}))
      ->capture_default_str();
  sub->add_flag("--no-sweep", args->no_sweep, "Skip the sweep of alternative layouts");
  sub->add_option("--seed", args->seed, "Seed of the simulated run behind the failure timeline (same seed, same run)")
      ->capture_default_str();
  sub->callback([args, &run] {
    run = [args]() -> ExitCode {
      auto fail = [](const Status& s) {
        fmt::print(stderr, "moetrain plan: {}\n", s.message());
        return ExitCode::kUsage;
      };
      std::vector<std::string> model_sets, cluster_sets, layout_sets;
      for (const std::string& s : args->sets) {
        if (s.rfind("cluster.", 0) == 0) cluster_sets.push_back(s.substr(8));
        else if (s.rfind("layout.", 0) == 0) layout_sets.push_back(s.substr(7));
        else model_sets.push_back(s);
      }
      auto model_text = read_file_or_preset(args->model, "models");
      if (!model_text) return fail(model_text.status());
      auto run_cfg = parse_run_config(model_text->first, model_text->second, model_sets);
      if (!run_cfg) return fail(run_cfg.status());
      auto cluster_text = read_file_or_preset(args->cluster, "clusters");
      if (!cluster_text) return fail(cluster_text.status());
      auto cluster = plan::parse_cluster(cluster_text->first, cluster_text->second, cluster_sets);
      if (!cluster) return fail(cluster.status());
      auto layout_text = read_file_or_preset(args->layout, "layouts");
      if (!layout_text) return fail(layout_text.status());
      auto layout = plan::parse_layout(layout_text->first, layout_text->second, layout_sets);
      if (!layout) return fail(layout.status());
      // A run config in phases is planned as the trainer runs it: its phases,
      // batches, sequence lengths and steps replace the layout's.
      Result<double> tokens = args->tokens.empty() ? Result<double>(0.0) : parse_tokens(args->tokens);
      if (!tokens) return fail(tokens.status());
      if (!run_cfg->phases.empty()) {
        auto sched = PhaseSchedule::make(*run_cfg);
        if (!sched) return fail(sched.status());
        if (*tokens > 0 && *tokens != double(sched->total_tokens()))
          return fail(Status::errorf("--tokens {:g}: the phases of {} train {} tokens (leave --tokens out)", *tokens,
                                     model_text->second, sched->total_tokens()));
        *tokens = double(sched->total_tokens());
        layout = run_phases_layout(*layout, *sched);
      }
      if (!(*tokens > 0))
        return fail(Status::error("--tokens is required (or a --model run config with [[phase]] tables)"));
      auto law = plan::load_scaling_law(args->law);
      if (!law) return fail(law.status());

      plan::PlanInputs in;
      in.model = run_cfg->model;
      in.model_source = model_text->second;
      in.model_seq_len = run_cfg->train.seq_len;
      in.cluster = *cluster;
      in.layout = *layout;
      in.tokens = *tokens;
      in.law = *law;
      in.search = args->search == "layers"    ? plan::SearchMode::kLayers
                  : args->search == "experts" ? plan::SearchMode::kExperts
                  : args->search == "none"    ? plan::SearchMode::kNone
                                              : plan::SearchMode::kAuto;
      in.sweep_layouts = !args->no_sweep;
      in.sim_seed = args->seed;
      auto p = plan::make_plan(in);
      if (!p) return fail(p.status());
      if (!args->html.empty()) {
        std::ofstream out(args->html, std::ios::binary);
        out << plan::to_html(*p);
        if (!out) return fail(Status::errorf("--html: cannot write {}", args->html));
      }
      if (args->json) fmt::print("{}\n", plan::to_json(*p).dump(2));
      else fmt::print("{}", plan::to_text(*p));
      return ExitCode::kOk;
    };
  });
}

}  // namespace mt
