// main.cpp — `moetrain <command>`: dispatches to one cmd_<name>.cpp each.
#include <CLI/CLI.hpp>

#include <string>

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

namespace {
// The vector ISA the kernels were compiled for (kernels/cpu/simd.h picks the same way).
#if defined(__AVX512F__)
constexpr const char* kVectorIsa = "AVX-512";
#else
constexpr const char* kVectorIsa = "AVX2+FMA";
#endif
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"moetrain — Mixture-of-Experts pretraining (CPU; MPI and CUDA behind the same interfaces)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("moetrain ") + MT_VERSION + " (commit " + MT_GIT_COMMIT + ", " +
                                        MT_ARCH_FLAGS + ", " + kVectorIsa + " kernels)");
  mt::CommandAction run;
  mt::register_train(app, run);
  mt::register_sft(app, run);
  mt::register_rl(app, run);
  mt::register_distill(app, run);
  mt::register_bench(app, run);
  mt::register_doctor(app, run);
  mt::register_ckpt(app, run);
  mt::register_report(app, run);
  mt::register_data(app, run);
  mt::register_plan(app, run);
  mt::register_config(app, run);
  mt::register_ladder(app, run);
  mt::register_mix(app, run);
  mt::register_sweep(app, run);
  mt::register_arch(app, run);
  mt::register_supervise(app, run);
  mt::register_generate(app, run);
  mt::register_eval(app, run);
  mt::register_tasks(app, run);
  mt::register_export(app, run);
  mt::register_import(app, run);
  mt::register_cli_reference(app, run);  // docs/cli.md: the tree above
  CLI11_PARSE(app, argc, argv);
  return int(run ? run() : mt::ExitCode::kOk);
}
