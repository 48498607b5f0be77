// main.cpp — `moetrain <command>`: dispatches to one cmd_<name>.cpp each.
#include <CLI/CLI.hpp>

#include "cli/cli_reference.h"
#include "cli/commands.h"
#include "cli/embedded_configs.h"

namespace mt {
const EmbeddedConfig* find_embedded_config(const std::string& name) {
  for (const auto& c : embedded_configs())
    if (c.name == name) return &c;
  return nullptr;
}
}  // namespace mt

int main(int argc, char** argv) {
  CLI::App app{"moetrain — Mixture-of-Experts pretraining (CPU; MPI and CUDA behind the same interfaces)"};
  app.require_subcommand(1);
  mt::CommandAction run;
  mt::register_train(app, run);
  mt::register_bench(app, run);
  mt::register_doctor(app, run);
  mt::register_ckpt(app, run);
  mt::register_report(app, run);
  mt::register_data(app, run);
  mt::register_plan(app, run);
  mt::register_config(app, run);
  mt::register_ladder(app, run);
  mt::register_mix(app, run);
  mt::register_supervise(app, run);
  mt::register_generate(app, run);
  mt::register_eval(app, run);
  mt::register_export(app, run);
  mt::register_import(app, run);
  mt::register_cli_reference(app, run);  // docs/cli.md: the tree above
  CLI11_PARSE(app, argc, argv);
  return int(run ? run() : mt::ExitCode::kOk);
}
