// cmd_bench.cpp — `moetrain bench --preset NAME --precision fp32|bf16 [--steps N] [--json]`.
// Measures the machine's peak (FMA loops; AMX for bf16), the GEMM library's
// best (2048^3 through mt::gemm), then full training steps (forward +
// backward + optimizer) of a preset on synthetic data: tokens/s, achieved
// model GFLOP/s (model/flops.h) and MFU against the peak measured in the
// same run, with a per-phase breakdown of where the step time goes. Under
// mpirun every rank benchmarks its part of the distributed step (dist.*
// keys via --set); rank 0 prints, peaks are summed over ranks, and the
// breakdown gains comm_wait (rank 0 blocked in collectives).
// --stream host|disk benchmarks weight streaming (docs/streaming.md): the
// streamed trainer and an in-place one of the same config step alternately,
// so the overhead is a ratio of medians taken in one run; bytes streamed per
// step, stall time and compute memory against the store come with it.
// Memory: the process's peak resident set (VmHWM) beside the planner's
// figure for the same configuration on a one-CPU cluster (plan/memory.h),
// the difference being the process itself (binary, libraries, the peak and
// GEMM probes' buffers).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <array>
#include <nlohmann/json.hpp>
#include <vector>

#include "cli/commands.h"
#include "cli/embedded_configs.h"
#include "core/machine_peak.h"
#include "core/phase_timer.h"
#include "core/threads.h"
#include "core/timer.h"
#include "dist/mpi_comm.h"
#include "kernels/cpu/gemm.h"
#include "model/attention_kernel.h"
#include "model/flops.h"
#include "plan/memory.h"
#include "train/trainer.h"

namespace mt {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Peak resident set of this process so far (VmHWM), bytes; 0 if unreadable.
double peak_rss_bytes() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0.0;
  char line[256];
  double kib = 0.0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmHWM: %lf kB", &kib) == 1) break;
  std::fclose(f);
  return kib * 1024.0;
}

// What `moetrain plan` says one CPU rank of this run allocates (0 if it cannot plan it).
double planner_bytes(const RunConfig& rc) {
  const plan::ClusterConfig cpu = plan::one_cpu_cluster("moetrain bench");
  plan::LayoutConfig l;
  l.source = "moetrain bench";
  l.gpus = 1;
  l.zero_stage = 0;
  l.micro_batch = rc.train.batch_size;
  l.global_batch = rc.train.batch_size * rc.train.grad_accum;
  l.params = rc.train.precision == MatmulPrecision::kBf16 ? plan::Precision::kBf16 : plan::Precision::kFp32;
  l.optimizer = rc.train.optimizer.name == OptimizerName::kMuon ? plan::OptimizerKind::kMuon : plan::OptimizerKind::kAdamW;
  l.moments = rc.train.optimizer.state_precision == StatePrecision::kBf16 ? plan::Precision::kBf16 : plan::Precision::kFp32;
  l.recompute = rc.train.activation_checkpointing == ActivationCheckpointing::kLayers ? plan::Recompute::kFull
                                                                                     : plan::Recompute::kNone;
  auto p = plan::resolve(l, rc.model, rc.train.seq_len, cpu);
  if (!p) return 0.0;
  return plan::memory_per_gpu(rc.model, plan::model_stats(rc.model, rc.train.seq_len), p.value(), cpu).total();
}

// The reference product: one 2048^3 GEMM at precision p, timed.
struct ReferenceGemm {
  static constexpr int64_t n = 2048;
  std::vector<float> a = std::vector<float>(n * n, 0.5f), b = std::vector<float>(n * n, 0.25f),
                     c = std::vector<float>(n * n);
  double gflops_once(MatmulPrecision p) {
    const double t0 = now_seconds();
    gemm(c.data(), a.data(), b.data(), GemmShape{n, n, n}, 0.0f, p);
    return 2.0 * double(n * n * n) / (now_seconds() - t0) / 1e9;
  }
};

double gemm_best_gflops(ReferenceGemm& ref, MatmulPrecision p) {
  std::vector<double> rates;
  for (int rep = 0; rep < 6; ++rep) {
    const double r = ref.gflops_once(p);
    if (rep > 0) rates.push_back(r);
  }
  return *std::max_element(rates.begin(), rates.end());
}

}  // namespace

void register_bench(CLI::App& app, CommandAction& run) {
  struct Args {
    std::string preset = "moe-512", precision = "fp32", stream = "off";
    int64_t steps = 4, threads = 0;
    bool json = false;
    std::vector<std::string> sets;
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand("bench", "Throughput and MFU of full training steps against the measured peak.");
  sub->add_option("--preset", args->preset, "configs/bench preset: dense-512, moe-512, moe-1024, moe-512-mla, moe-512-mtp, moe-512-hybrid, tiny")->capture_default_str();
  sub->add_option("--precision", args->precision, "fp32 or bf16")
      ->check(CLI::IsMember({"fp32", "bf16"}))->capture_default_str();
  sub->add_option("--steps", args->steps, "Timed steps (after one warm-up step); the median is reported")
      ->check(CLI::PositiveNumber)->capture_default_str();
  sub->add_option("--threads", args->threads, "Worker threads (0 = all)")->capture_default_str();
  sub->add_option("--set", args->sets, "Override a preset key: section.key=value (repeatable)");
  sub->add_option("--stream", args->stream,
                  "Weight streaming: off, host or disk (stream.store); steps alternate with an in-place trainer of "
                  "the same config and the overhead is reported")
      ->check(CLI::IsMember({"off", "host", "disk"}))
      ->capture_default_str();
  sub->add_flag("--json", args->json, "Print one JSON object instead of a table");
  sub->callback([args, &run] {
    run = [args]() -> ExitCode {
      const EmbeddedConfig* e = find_embedded_config("bench/" + args->preset);
      if (!e) {
        fmt::print(stderr, "moetrain bench: unknown preset '{}' (dense-512, moe-512, moe-1024, moe-512-mla, moe-512-mtp, moe-512-hybrid, tiny)\n", args->preset);
        return ExitCode::kUsage;
      }
      std::vector<std::string> sets = args->sets;
      sets.push_back("train.precision=" + args->precision);
      sets.push_back("train.steps=1000000");
      sets.push_back("data.path=\"\"");
      sets.push_back("train.threads=" + std::to_string(args->threads));
      const bool streaming = args->stream != "off";
      if (streaming) {
        sets.push_back("stream.enabled=true");
        sets.push_back("stream.store=\"" + args->stream + "\"");
      }
      auto cfg = parse_run_config(e->text, "<embedded bench/" + args->preset + ".toml>", sets);
      if (!cfg) {
        fmt::print(stderr, "moetrain bench: {}\n", cfg.status().message());
        return ExitCode::kUsage;
      }
      std::unique_ptr<Comm> world = make_world_comm(cfg.value().dist.timeout_s);  // outlives the trainer
      const int ranks = world->size();
      const int threads = ranks > 1 && args->threads == 0 ? default_rank_threads() : int(args->threads);
      set_num_threads(threads);
      const bool bf16 = args->precision == "bf16";
      PeakResult peak = measure_peak(0.3, threads);
      peak.fp32_gflops *= ranks;  // every rank measured its own cores
      peak.bf16_gflops *= ranks;
      peak.amx_bf16_gflops *= ranks;
      const char* peak_kind = bf16 ? bf16_matmul_peak(peak).kind : "fp32_fma";
      const double peak_gflops = bf16 ? bf16_matmul_peak(peak).gflops : peak.fp32_gflops;
      const MatmulPrecision ref_prec = bf16 ? MatmulPrecision::kBf16 : MatmulPrecision::kFp32;
      ReferenceGemm ref;
      const double gemm_best = ranks * gemm_best_gflops(ref, ref_prec);
      TrainerOptions opt;
      opt.peak_gflops = peak_gflops;
      opt.progress = false;
      opt.print_config = false;
      opt.comm = world.get();
      // The benchmarked trainer and, with streaming, an in-place one of the same config stepped alternately.
      RunConfig in_place_cfg = cfg.value();
      in_place_cfg.stream = StreamConfig();
      std::unique_ptr<Trainer> streamed_or_only, in_place;
      for (const RunConfig* c : {&cfg.value(), streaming ? &in_place_cfg : nullptr}) {
        if (!c) continue;
        auto r = Trainer::create(*c, opt);
        if (!r) {
          fmt::print(stderr, "moetrain bench: {}\n", r.status().message());
          if (ranks > 1) abort_job(*world, int(ExitCode::kFailed));
          return ExitCode::kFailed;
        }
        (c == &in_place_cfg ? in_place : streamed_or_only) = std::move(r.value());
      }
      Trainer& t = *streamed_or_only;
      if (in_place) in_place->train_step();
      t.train_step();  // warm-up: primitive creation, first-touch of buffers
      PhaseTimer::reset();
      // The reference GEMM once more after each timed step: on a shared host
      // its rate moves with the neighbours' load, so the step's rate is also
      // taken against the reference measured in the same seconds.
      // Model FLOPs count the assignments a step kept (model/flops.h): a fresh
      // router on the synthetic stream drops a large share of them.
      std::vector<double> times, in_place_times, stall, ref_after, vs_ref_after, step_gflops, step_gflop;
      int64_t dropped = 0, assignments = 0;
      std::array<double, size_t(Phase::kCount)> phases{};
      StepResult last;
      for (int64_t s = 0; s < args->steps; ++s) {
        const auto before = PhaseTimer::totals();
        last = t.train_step();
        const auto after = PhaseTimer::totals();
        for (size_t p = 0; p < phases.size(); ++p) phases[p] += after[p] - before[p];
        times.push_back(last.seconds);
        step_gflop.push_back(t.flops_of(last) / 1e9);
        step_gflops.push_back(step_gflop.back() / last.seconds);
        dropped += last.dropped;
        assignments += last.assignments;
        stall.push_back(last.stream_stall_s);
        if (in_place) in_place_times.push_back(in_place->train_step().seconds);
        ref_after.push_back(ranks * ref.gflops_once(ref_prec));
        vs_ref_after.push_back(step_gflops.back() / ref_after.back());
      }
      double total_time = 0.0;
      for (double x : times) total_time += x;
      const double step_s = median(times);
      const TrainConfig& tc = cfg.value().train;
      const double tokens = double(tc.batch_size * tc.seq_len * tc.grad_accum);
      const double model_gflops = median(step_gflops);
      nlohmann::json j;
      j["preset"] = args->preset;
      const OptimizerConfig& oc = cfg.value().train.optimizer;  // [optim]; its time is time_fraction.optimizer
      j["optimizer"] = std::string(oc.name == OptimizerName::kMuon ? "muon" : "adamw") + (oc.hyperball ? "+hyperball" : "");
      j["precision"] = args->precision;
      j["attention_kernel"] = attention_kernel_name(tc.attention_kernel, tc.precision);
      j["threads"] = num_threads();
      j["ranks"] = ranks;
      j["tokens_per_step"] = tokens;
      j["step_time_s"] = step_s;
      j["tokens_per_s"] = tokens / step_s;
      j["model_gflops_per_step"] = median(step_gflop);
      j["model_gflops_per_step_no_drops"] = t.flops_per_step() / 1e9;
      j["dropped_frac"] = assignments ? double(dropped) / double(assignments) : 0.0;
      j["model_gflops_per_s"] = model_gflops;
      j["peak_gflops_per_s"] = peak_gflops;
      j["peak_kind"] = peak_kind;
      j["peak_fp32_fma_gflops_per_s"] = peak.fp32_gflops;
      j["peak_avx512_bf16_gflops_per_s"] = peak.bf16_gflops;
      j["peak_amx_bf16_gflops_per_s"] = peak.amx_bf16_gflops;
      j["gemm_best_gflops_per_s"] = gemm_best;
      j["mfu"] = model_gflops / peak_gflops;
      j["mfu_vs_fp32_peak"] = model_gflops / peak.fp32_gflops;
      j["mfu_vs_gemm_best"] = model_gflops / gemm_best;
      j["gemm_interleaved_gflops_per_s"] = median(ref_after);
      j["mfu_vs_gemm_interleaved"] = median(vs_ref_after);
      nlohmann::json br;
      double accounted = 0.0;
      for (size_t p = 0; p < phases.size(); ++p) {
        br[phase_name(Phase(p))] = phases[p] / total_time;
        accounted += phases[p];
      }
      br["other"] = std::max(0.0, 1.0 - accounted / total_time);
      j["time_fraction"] = br;
      // One rank's peak against the planner's figure (one process: under MPI the plan would need the layout).
      j["peak_rss_bytes"] = peak_rss_bytes();
      if (ranks == 1 && !streaming) {
        const double planned = planner_bytes(cfg.value());
        j["planner_bytes"] = planned;
        j["peak_rss_over_planner"] = planned > 0 ? j["peak_rss_bytes"].get<double>() / planned : 0.0;
      }
      if (streaming) {
        const double base = median(in_place_times);
        j["stream"] = {{"store", args->stream},
                       {"prefetch_layers", cfg.value().stream.prefetch_layers},
                       {"bytes_in_per_step", last.stream_bytes_in},
                       {"bytes_out_per_step", last.stream_bytes_out},
                       {"stall_s_median", median(stall)},
                       {"compute_memory_bytes", last.compute_memory_bytes},
                       {"store_bytes", last.store_bytes},
                       {"in_place_step_time_s", base},
                       {"in_place_tokens_per_s", tokens / base},
                       {"overhead", step_s / base - 1.0}};
      }
      if (world->rank() != 0) return ExitCode::kOk;
      if (args->json) {
        fmt::print("{}\n", j.dump());
        return ExitCode::kOk;
      }
      fmt::print("preset {}  precision {}  optimizer {}  attention {}  threads {}{}\n", args->preset, args->precision,
                 j["optimizer"].get<std::string>(), j["attention_kernel"].get<std::string>(), num_threads(),
                 ranks > 1 ? fmt::format(" per rank x {} ranks", ranks) : "");
      fmt::print("  peak (measured)      {:8.1f} GFLOP/s  ({})\n", peak_gflops, j["peak_kind"].get<std::string>());
      fmt::print("  gemm best 2048^3     {:8.1f} GFLOP/s\n", gemm_best);
      fmt::print("  step time (median)   {:8.3f} s   over {} steps\n", step_s, args->steps);
      fmt::print("  tokens/s             {:8.0f}\n", tokens / step_s);
      fmt::print("  model GFLOP/s        {:8.1f}\n", model_gflops);
      if (assignments)
        fmt::print("  dropped by capacity  {:8.1f} %   of expert assignments, not counted as model FLOPs "
                   "({:.0f} of {:.0f} GFLOP per step)\n",
                   100.0 * j["dropped_frac"].get<double>(), j["model_gflops_per_step"].get<double>(),
                   j["model_gflops_per_step_no_drops"].get<double>());
      fmt::print("  MFU                  {:8.1f} %   (vs gemm best {:.1f} %, vs the gemm after each step {:.1f} %)\n",
                 100.0 * model_gflops / peak_gflops, 100.0 * model_gflops / gemm_best,
                 100.0 * j["mfu_vs_gemm_interleaved"].get<double>());
      if (streaming) {
        const nlohmann::json& st = j["stream"];
        fmt::print("  streaming ({} store, prefetch {}): {:.1f} MB in + {:.1f} MB out per step, stall {:.1f}% of the "
                   "step\n", args->stream, st["prefetch_layers"].get<int64_t>(),
                   1e-6 * st["bytes_in_per_step"].get<double>(), 1e-6 * st["bytes_out_per_step"].get<double>(),
                   100.0 * st["stall_s_median"].get<double>() / step_s);
        fmt::print("  compute memory       {:8.1f} MiB  (store {:.1f} MiB)\n",
                   st["compute_memory_bytes"].get<double>() / (1 << 20), st["store_bytes"].get<double>() / (1 << 20));
        fmt::print("  in place, alternate  {:8.3f} s   {:.0f} tokens/s; streaming overhead {:+.1f}%\n",
                   st["in_place_step_time_s"].get<double>(), st["in_place_tokens_per_s"].get<double>(),
                   100.0 * st["overhead"].get<double>());
      }
      if (j.contains("planner_bytes"))
        fmt::print("  peak memory (VmHWM)  {:8.1f} MiB  planner {:.1f} MiB: {:+.1f} MiB for the process itself\n",
                   j["peak_rss_bytes"].get<double>() / (1 << 20), j["planner_bytes"].get<double>() / (1 << 20),
                   (j["peak_rss_bytes"].get<double>() - j["planner_bytes"].get<double>()) / (1 << 20));
      else
        fmt::print("  peak memory (VmHWM)  {:8.1f} MiB\n", j["peak_rss_bytes"].get<double>() / (1 << 20));
      fmt::print("  time by phase:");
      for (auto it = br.begin(); it != br.end(); ++it) fmt::print(" {} {:.0f}%", it.key(), 100.0 * it.value().get<double>());
      fmt::print("\n");
      return ExitCode::kOk;
    };
  });
}

}  // namespace mt
