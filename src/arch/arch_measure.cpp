// arch_measure.cpp — see arch_measure.h.
#include "arch/arch_measure.h"

#include <fmt/format.h>
#include <unistd.h>

#include "arch/arch_step.h"
#include "core/subprocess.h"

namespace mt {
namespace {

using json = nlohmann::json;

json skipped(const std::string& why, const std::string& log) {
  return {{"skipped", why + (log.empty() ? "" : " (log " + log + ")")}};
}

}  // namespace

Result<json> measure_bench(const MeasureContext& ctx, const ArchSpec& spec, const ArchCandidate& c, int64_t ranks) {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env = {{"OMP_WAIT_POLICY", "PASSIVE"}};
  if (ranks > 1) {
    argv = {spec.mpirun, "-np", std::to_string(ranks), "--oversubscribe", "--bind-to", "none"};
    if (geteuid() == 0) {  // OpenMPI refuses root without both (containers, CI)
      env.emplace_back("OMPI_ALLOW_RUN_AS_ROOT", "1");
      env.emplace_back("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    }
  }
  argv.insert(argv.end(), {ctx.moetrain, "bench", "--preset", spec.bench_preset, "--precision", spec.precision,
                           "--steps", std::to_string(spec.bench_steps), "--json"});
  for (const std::string& s : c.bench) argv.insert(argv.end(), {"--set", s});
  if (ranks > 1) argv.insert(argv.end(), {"--set", fmt::format("dist.ep={}", ranks)});
  const std::string stem = fmt::format("{}/{}.bench-np{}", ctx.log_dir, c.name, ranks);
  auto r = run_child(argv, env, stem + ".out", stem + ".log");
  if (!r) {
    if (ranks > 1) return skipped(r.status().message(), "");
    return r.status();
  }
  const json j = last_json_line(r->out);
  const bool ok = r->exit_code == 0 && j.is_object() && j.value("ranks", int64_t(0)) == ranks;
  if (!ok) {
    const std::string why =
        fmt::format("{} exited {} {}", ranks > 1 ? spec.mpirun : "moetrain bench", r->exit_code,
                    j.is_object() ? fmt::format("with {} ranks", j.value("ranks", int64_t(0))) : "without a result");
    if (ranks > 1) return skipped(why + ": " + file_tail(r->log_path, 400), r->log_path);
    return Status::errorf("candidate {}: bench: {}: {}", c.name, why, file_tail(r->log_path, 2000));
  }
  json rec;
  for (const char* k :
       {"preset", "precision", "routing", "threads", "ranks", "tokens_per_step", "step_time_s", "tokens_per_s",
        "model_gflops_per_s", "peak_gflops_per_s", "peak_kind", "gemm_best_gflops_per_s", "mfu", "mfu_vs_gemm_best",
        "mfu_vs_gemm_interleaved", "dropped_frac", "time_fraction", "peak_rss_bytes"})
    if (j.contains(k)) rec[k] = j[k];
  const json& tf = j.value("time_fraction", json::object());
  rec["comm_share"] = tf.value("comm_wait", 0.0);
  return rec;
}

Result<json> measure_decode(const MeasureContext& ctx, const ArchSpec& spec, const ArchCandidate& c,
                            const std::string& run_dir, const std::string& run_name) {
  const std::vector<std::string> argv = {ctx.moetrain,       "generate",
                                         "--ckpt",           run_dir,
                                         "--prompt",         "template <typename T>\n",
                                         "--max-new-tokens", std::to_string(spec.decode_tokens),
                                         "--temperature",    "0",
                                         "--no-stop",        "--json",
                                         "--no-progress"};
  const std::string stem = ctx.log_dir + "/" + c.name + ".generate";
  auto r = run_child(argv, {{"OMP_WAIT_POLICY", "PASSIVE"}}, stem + ".out", stem + ".log");
  if (!r) return r.status();
  json j = r->exit_code == 0 ? json::parse(r->out, nullptr, false) : json();
  if (!j.is_object() || !j.contains("decode_tokens_per_s"))
    return Status::errorf("candidate {}: generate on {} exited {} without a result: {}", c.name, run_dir, r->exit_code,
                          file_tail(r->log_path, 2000));
  json rec;
  for (const char* k :
       {"step", "prefill_tokens", "decode_tokens", "prefill_tokens_per_s", "decode_tokens_per_s", "kv_cache_bytes"})
    rec[k] = j[k];
  rec["run"] = run_name;
  return rec;
}

}  // namespace mt
