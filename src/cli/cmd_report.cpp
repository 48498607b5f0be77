// cmd_report.cpp — `moetrain report RUN_DIR [--out FILE]`: the HTML training
// report from RUN_DIR/metrics.jsonl (default RUN_DIR/report.html).
#include <fmt/format.h>

#include "cli/commands.h"
#include "report/run_report.h"

namespace mt {

void register_report(CLI::App& app, CommandAction& run) {
  auto dir = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand("report", "Write the HTML training report of a run directory.");
  sub->add_option("run_dir", *dir, "Run directory holding metrics.jsonl")->required();
  sub->add_option("--out", *out, "Output file (default RUN_DIR/report.html)");
  sub->callback([dir, out, &run] {
    run = [dir, out]() -> int {
      const std::string path = out->empty() ? *dir + "/report.html" : *out;
      Status s = report::write_run_report(*dir + "/metrics.jsonl", path, "moetrain run " + *dir);
      if (!s) {
        fmt::print(stderr, "moetrain report: {}\n", s.message());
        return 1;
      }
      fmt::print("{}\n", path);
      return 0;
    };
  });
}

}  // namespace mt
