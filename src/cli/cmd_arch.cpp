// cmd_arch.cpp — `moetrain arch compare SPEC --out DIR [--jobs N]`: the
// four-factor architecture comparison (arch/arch_compare.h,
// docs/architectures.md); `moetrain arch report DIR` writes DIR/report.html
// again from DIR/compare.json and prints the table.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "arch/arch_compare.h"
#include "arch/arch_report.h"
#include "cli/claim_out.h"
#include "cli/commands.h"
#include "cli/embedded_configs.h"
#include "core/file_io.h"
#include "train/run_config.h"

namespace mt {
namespace {

struct ArchArgs {
  std::string spec, out = "runs/arch";
  std::vector<std::string> sets;
  bool no_progress = false, move_aside = false;
  int64_t jobs = 1;
};

// The bench preset with every candidate's keys, checked as `moetrain bench` would read it.
Status check_bench(const ArchSpec& spec) {
  const std::string name = spec.bench_preset.rfind("bench/", 0) == 0 ? spec.bench_preset : "bench/" + spec.bench_preset;
  const EmbeddedConfig* e = find_embedded_config(name);
  if (!e) return Status::errorf("{}: bench.preset: no benchmark preset '{}'", spec.source, spec.bench_preset);
  for (size_t i = 0; i < spec.candidates.size(); ++i) {
    std::vector<std::string> sets = spec.candidates[i].bench;
    sets.push_back("data.path=\"\"");
    if (spec.ep_ranks > 1) sets.push_back(fmt::format("dist.ep={}", spec.ep_ranks));
    auto cfg = parse_run_config(e->text, "<embedded " + name + ".toml>", sets);
    if (!cfg) return Status::errorf("{}: candidate[{}].bench: {}", spec.source, i, cfg.status().message());
  }
  return Status::ok();
}

ExitCode run_compare(const ArchArgs& a) {
  auto spec = load_arch_spec(a.spec, a.sets);
  if (!spec) return fail("arch compare", spec.status(), ExitCode::kUsage);
  if (Status s = check_bench(spec.value()); !s) return fail("arch compare", s, ExitCode::kUsage);
  // Planned and checked before DIR is touched: a refused comparison leaves nothing.
  auto plan = plan_arch_compare(spec.value(), a.out);
  if (!plan) return fail("arch compare", plan.status(), ExitCode::kUsage);
  if (auto refused = claim_out("arch compare", a.out, arch_owner(spec.value(), plan.value()), a.move_aside))
    return *refused;
  ArchCompareOptions opt;
  opt.jobs = a.jobs;
  opt.progress = !a.no_progress;
  auto cmp = run_arch_compare(spec.value(), plan.value(), opt);
  if (!cmp) return fail("arch compare", cmp.status(), ExitCode::kFailed);
  fmt::print("{}", compare_table(cmp.value()));
  fmt::print("{}/compare.json\n{}/report.html\n", a.out, a.out);
  return ExitCode::kOk;
}

ExitCode run_report(const std::string& dir) {
  auto text = read_file(dir + "/compare.json", "comparison");
  if (!text) return fail("arch report", text.status(), ExitCode::kUsage);
  const nlohmann::json cmp = nlohmann::json::parse(text.value(), nullptr, false);
  if (cmp.is_discarded() || !cmp.is_object() || !cmp.contains("candidates") || !cmp.contains("ranking"))
    return fail("arch report", Status::errorf("{}/compare.json: not a comparison", dir), ExitCode::kUsage);
  if (Status w = write_file_atomic(dir + "/report.html", compare_html(cmp)); !w)
    return fail("arch report", w, ExitCode::kFailed);
  fmt::print("{}", compare_table(cmp));
  fmt::print("{}/report.html\n", dir);
  return ExitCode::kOk;
}

}  // namespace

void register_arch(CLI::App& app, CommandAction& run) {
  CLI::App* arch = app.add_subcommand("arch", "Architecture decisions: compare candidates on four factors.");
  arch->require_subcommand(1);
  auto a = std::make_shared<ArchArgs>();
  CLI::App* cmp = arch->add_subcommand(
      "compare",
      "Measured MFU, planned hero MFU, expert-parallel cost and the ladder's projected hero loss (plus inference "
      "cost) per candidate architecture, ranked by the spec's rule; resumable");
  cmp->add_option("spec", a->spec, "Comparison file (TOML, docs/architectures.md)")->required();
  cmp->add_option("--out", a->out, "Step records, ladders, compare.json and report.html")->capture_default_str();
  cmp->add_option("--set", a->sets, "Override a key of the comparison file: KEY=VALUE (e.g. bench.steps=2)");
  cmp->add_option("--jobs", a->jobs,
                  "Ladder runs trained at once, across every candidate's ladder (results do not depend on it; the "
                  "measurements always run alone)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmp->add_flag("--no-progress", a->no_progress, "No live progress line");
  cmp->add_flag("--move-aside", a->move_aside,
                "OUT holds another comparison (or other files): rename it to OUT.prev-N and start afresh");
  cmp->callback([a, &run] { run = [a] { return run_compare(*a); }; });

  auto dir = std::make_shared<std::string>();
  CLI::App* rep = arch->add_subcommand("report", "Write DIR/report.html again from DIR/compare.json; print the table");
  rep->add_option("dir", *dir, "Output directory of `arch compare`")->required();
  rep->callback([dir, &run] { run = [dir] { return run_report(*dir); }; });
}

}  // namespace mt
