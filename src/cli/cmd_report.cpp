// cmd_report.cpp — `moetrain report DIR [--out FILE] [--hold-out NAME]...`:
// the HTML report of whatever DIR holds: a training run (metrics.jsonl), a
// scaling ladder (results.jsonl: the fitted law with its projection and
// interval, the runs, any held-out rung predicted), or a mixture search
// (search.json: predicted against actual, the chosen weights). Default
// output DIR/report.html.
#include <fmt/format.h>

#include <filesystem>

#include "cli/commands.h"
#include "core/file_io.h"
#include "ladder/analysis.h"
#include "ladder/fit_html.h"
#include "mix/runner/mix_report.h"
#include "sweep/runner/sweep_report.h"
#include "report/run_report.h"

namespace mt {
namespace {

// `bad_input`: the results cannot be read or fitted (exit 2, as `ladder fit`
// gives for the same data), not a failed write.
Status write_ladder_report(const std::string& dir, const std::string& path, const std::vector<std::string>& hold_out,
                           bool& bad_input) {
  bad_input = true;
  auto runs = ladder::load_results(dir + "/results.jsonl");
  if (!runs) return runs.status();
  ladder::LadderOptions opt;
  opt.hold_out = hold_out;
  double c_max = 0;
  for (const ladder::Run& r : *runs)
    if (std::find(hold_out.begin(), hold_out.end(), r.name) == hold_out.end()) c_max = std::max(c_max, r.flops);
  opt.target.flops = 10 * c_max;  // the projection a decade past the largest fitted run
  auto a = ladder::analyze(*runs, opt);
  if (!a) return a.status();
  bad_input = false;
  return write_file_atomic(path, ladder::fit_html(*a, dir + "/results.jsonl"));
}

Status write_mix_report(const std::string& dir, const std::string& path) {
  auto text = read_file(dir + "/search.json", "mixture search");
  if (!text) return text.status();
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("config") || !j.contains("regressors"))
    return Status::errorf("{}/search.json: not a mixture search's result", dir);
  return write_file_atomic(path, mix_search_html(j));
}

}  // namespace

void register_report(CLI::App& app, CommandAction& run) {
  auto dir = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto hold_out = std::make_shared<std::vector<std::string>>();
  CLI::App* sub = app.add_subcommand("report",
                                     "Write the HTML report of a run directory, a ladder (ladder run --out), a mixture "
                                     "search (mix search --out) or a sweep (sweep --out).");
  sub->add_option("dir", *dir,
                  "Run directory (metrics.jsonl), ladder directory (results.jsonl), search directory (search.json) or "
                  "sweep directory (front.json)")
      ->required();
  sub->add_option("--out", *out, "Output file (default DIR/report.html)");
  sub->add_option("--hold-out", *hold_out,
                  "Ladders: leave rung NAME out of the fit and show it predicted (repeatable)");
  sub->callback([dir, out, hold_out, &run] {
    run = [dir, out, hold_out]() -> ExitCode {
      namespace fs = std::filesystem;
      const std::string path = out->empty() ? *dir + "/report.html" : *out;
      Status s = Status::ok();
      bool bad_input = false;
      if (fs::exists(*dir + "/search.json"))
        s = write_mix_report(*dir, path);
      else if (fs::exists(*dir + "/front.json"))  // a sweep: it has a results.jsonl too
        s = write_sweep_report(*dir, path);
      else if (fs::exists(*dir + "/results.jsonl"))
        s = write_ladder_report(*dir, path, *hold_out, bad_input);
      else
        s = report::write_run_report(*dir, path, "moetrain run " + *dir);
      if (!s) return fail("report", s, bad_input ? ExitCode::kUsage : ExitCode::kFailed);
      fmt::print("{}\n", path);
      return ExitCode::kOk;
    };
  });
}

}  // namespace mt
