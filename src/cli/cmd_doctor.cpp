// cmd_doctor.cpp — `moetrain doctor [--json] [--bandwidth-bytes N] [--memory-mib N]`:
// health checks of this machine, or of every rank of `mpirun -np N moetrain
// doctor` (docs/health.md; the checks and their verdicts: dist/doctor.h).
// Rank 0 prints the table (or JSON). Exit 0 when all pass, 1 naming the culprits.
// `moetrain doctor --write-cluster FILE [--threads N] [--measure-tokens N]`
// instead measures this CPU's kernels and writes the cluster file `moetrain
// plan --cluster` reads (measure/cpu_measure.h; docs/planner.md, "A measured CPU").
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <system_error>
#include <string>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "core/file_io.h"
#include "core/threads.h"
#include "dist/doctor.h"
#include "dist/health_check.h"
#include "dist/mpi_comm.h"
#include "kernels/cpu/gemm_fault.h"
#include "measure/cpu_measure.h"
#include "train/fault_injection.h"

namespace mt {
namespace {

struct DoctorArgs {
  bool json = false;
  int64_t bandwidth_bytes = 4 << 20;
  int64_t memory_mib = 256;
  double timeout_s = 60;
  std::string inject_fault;
  std::string write_cluster;  // measure this CPU and write a cluster file here (no health checks)
  int64_t measure_tokens = 4096;
  int64_t threads = 0;
  std::string command;  // the command line, for the file's header
};

// --write-cluster: one process on the trainer's threads (train.threads = 0: all, as bench).
ExitCode write_cluster(const DoctorArgs& a) {
  std::unique_ptr<Comm> world = make_world_comm(a.timeout_s);
  if (world->size() > 1) {
    fmt::print(stderr, "moetrain doctor: --write-cluster measures one process; run it without mpirun\n");
    return ExitCode::kUsage;
  }
  // A file that cannot be written is refused before a minute of measuring, not after.
  const std::filesystem::path dir = std::filesystem::path(a.write_cluster).parent_path();
  if (std::error_code ec; !dir.empty() && !std::filesystem::is_directory(dir, ec)) {
    fmt::print(stderr, "moetrain doctor: --write-cluster {}: no directory {}\n", a.write_cluster, dir.string());
    return ExitCode::kUsage;
  }
  set_num_threads(int(a.threads));
  fmt::print(stderr, "moetrain doctor: measuring this CPU on {} thread(s) (about a minute)\n", num_threads());
  auto prof = measure_cpu_profile(CpuMeasureOptions{a.measure_tokens, 3, a.command});
  if (!prof) {
    fmt::print(stderr, "moetrain doctor: {}\n", prof.status().message());
    return ExitCode::kFailed;
  }
  const std::string text = plan::cpu_cluster_toml(*prof);
  // What plan will read must parse: a writer that produced a file its reader refuses would be a bug.
  if (auto parsed = plan::parse_cluster(text, a.write_cluster); !parsed) {
    fmt::print(stderr, "moetrain doctor: --write-cluster: the file written would not parse (a bug): {}\n",
               parsed.status().message());
    return ExitCode::kFailed;
  }
  if (Status st = write_file_atomic(a.write_cluster, text); !st) {
    fmt::print(stderr, "moetrain doctor: --write-cluster: {}\n", st.message());
    return ExitCode::kFailed;
  }
  const plan::CpuPrecisionProfile &f = prof->fp32, &b = prof->bf16;
  fmt::print(
      "{}, {} thread(s): peak fp32 {:.1f} / bf16 {:.1f} GFLOP/s ({}), 2048^3 {:.1f} / {:.1f}, "
      "model products x {:.3f} (k0 {:.0f}) / x {:.3f} (k0 {:.0f}), experts' time x {:.3f} / x {:.3f}, "
      "attention {:.1f} / {:.1f}, gated delta {:.1f}, memory {:.1f} GB/s\n",
      prof->cpu, prof->threads, f.rates.peak_gflops, b.rates.peak_gflops, prof->bf16_unit, f.rates.gemm_gflops,
      b.rates.gemm_gflops, f.rates.gemm_efficiency, f.rates.gemm_k0, b.rates.gemm_efficiency, b.rates.gemm_k0,
      f.rates.experts_factor, b.rates.experts_factor, f.rates.attention_gflops, b.rates.attention_gflops,
      f.rates.delta_gflops, prof->memory_gbps);
  fmt::print(stderr, "moetrain doctor: wrote {}\n", a.write_cluster);
  return ExitCode::kOk;
}

// "wronggemm:RANK" -> RANK; the doctor runs no steps, so no STEP.
Result<int> parse_doctor_fault(const std::string& spec) {
  int rank = -1;
  char extra = 0;
  if (std::sscanf(spec.c_str(), "wronggemm:%d%c", &rank, &extra) != 1 || rank < 0)
    return Status::errorf("--inject-fault: expected wronggemm:RANK, got \"{}\"", spec);
  return rank;
}

void print_table(const std::vector<DoctorRow>& rows, const std::vector<std::string>& hosts) {
  fmt::print("{:<17} {:>5} {:<16} {:<6} {:>10}  {}\n", "check", "rank", "host", "result", "time", "detail");
  for (const DoctorRow& r : rows)
    fmt::print("{:<17} {:>5} {:<16} {:<6} {:>8.2f}ms  {}\n", r.check, r.rank < 0 ? "-" : std::to_string(r.rank),
               r.rank < 0 ? "" : hosts[r.rank].substr(0, 16), r.pass ? "pass" : "FAIL", 1e3 * r.seconds, r.detail);
}

ExitCode run_doctor(const DoctorArgs& a) {
  if (!a.write_cluster.empty()) return write_cluster(a);
  int inject_rank = -1;
  if (!a.inject_fault.empty()) {
    auto f = parse_doctor_fault(a.inject_fault);
    if (!f) {
      fmt::print(stderr, "moetrain doctor: {}\n", f.status().message());
      return ExitCode::kUsage;
    }
    inject_rank = f.value();
  }
  std::unique_ptr<Comm> world = make_world_comm(a.timeout_s);
  const bool root = world->rank() == 0;
  if (world->rank() == inject_rank) {
    fmt::print(stderr, "moetrain doctor: rank {}: injected fault: GEMM off by {:g} relative\n", inject_rank,
               kInjectedGemmError);
    gemm_inject_relative_error(kInjectedGemmError);
  }
  auto report = run_doctor(*world, DoctorOptions{a.bandwidth_bytes, a.memory_mib, a.timeout_s});
  if (!report) {  // a partner that does not answer leaves nothing to gather: end the job
    fmt::print(stderr, "moetrain doctor: rank {}: {}\n", world->rank(), report.status().message());
    abort_job(*world, int(ExitCode::kFailed));
  }
  const DoctorReport& rep = report.value();
  const std::vector<std::string>& hosts = rep.hosts;
  const std::vector<DoctorRow>& rows = rep.rows;
  const std::vector<std::string>& failures = rep.failures;
  const std::vector<int>& culprit_ranks = rep.culprit_ranks;
  const std::string& slowest = rep.slowest_link;
  if (root) {
    if (a.json) {
      nlohmann::json j = {{"ok", failures.empty()}, {"ranks", world->size()}, {"hosts", hosts},
                          {"culprit_ranks", culprit_ranks}, {"failures", failures}, {"slowest_link", slowest}};
      for (const DoctorRow& r : rows)
        j["checks"].push_back({{"check", r.check}, {"rank", r.rank}, {"pass", r.pass}, {"seconds", r.seconds},
                               {"detail", r.detail}});
      fmt::print("{}\n", j.dump(2));
    } else {
      print_table(rows, hosts);
      if (!slowest.empty()) fmt::print("slowest link: {}\n", slowest);
    }
    std::string all;
    for (const std::string& f : failures) all += (all.empty() ? "" : ", ") + f;
    if (failures.empty()) fmt::print(stderr, "moetrain doctor: all checks passed on {} rank(s)\n", world->size());
    else fmt::print(stderr, "moetrain doctor: FAILED: culprit rank(s) {}: {}\n", join_ranks(culprit_ranks), all);
  }
  return failures.empty() ? ExitCode::kOk : ExitCode::kFailed;
}

}  // namespace

void register_doctor(CLI::App& app, CommandAction& run) {
  auto args = std::make_shared<DoctorArgs>();
  CLI::App* sub = app.add_subcommand(
      "doctor", "Health checks: GEMM against a reference and across ranks, NaN scan, memory, links, clocks, binary "
                "(one process, or every rank of mpirun -np N).");
  sub->add_flag("--json", args->json, "Print JSON instead of the table");
  sub->add_option("--bandwidth-bytes", args->bandwidth_bytes, "Message size of the bandwidth ping-pong")
      ->capture_default_str()
      ->check(CLI::Range(int64_t(8), int64_t(1) << 30));
  sub->add_option("--memory-mib", args->memory_mib, "Buffer of the memory test, per rank")
      ->capture_default_str()
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  sub->add_option("--timeout", args->timeout_s, "Seconds a rank waits for another before naming it")
      ->capture_default_str()
      ->check(positive());
  sub->add_option("--inject-fault", args->inject_fault,
                  "Testing only: wronggemm:RANK makes that rank's GEMM off by 1e-3 relative");
  sub->add_option("--write-cluster", args->write_cluster,
                  "Measure this CPU's kernels (peaks, model-shaped GEMMs, attention, gated delta, memory) and write "
                  "a cluster file for `moetrain plan --cluster` here, instead of the health checks");
  sub->add_option("--measure-tokens", args->measure_tokens,
                  "--write-cluster: rows of the measured products (the bench presets' batch: 8 x 512)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t(512), int64_t(1) << 16));
  sub->add_option("--threads", args->threads, "--write-cluster: threads to measure on (0 = all, as train and bench)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t(0), int64_t(256)));
  sub->callback([args, &run, sub] {
    std::string cmd = "moetrain doctor --write-cluster " + args->write_cluster;
    if (sub->count("--threads")) cmd += " --threads " + std::to_string(args->threads);
    if (sub->count("--measure-tokens")) cmd += " --measure-tokens " + std::to_string(args->measure_tokens);
    args->command = cmd;
    run = [args]() { return run_doctor(*args); };
  });
}

}  // namespace mt
