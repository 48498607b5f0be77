// step_bench.cpp — see step_bench.h.
#include "measure/step_bench.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <vector>

#include "core/machine_peak.h"
#include "core/phase_timer.h"
#include "core/threads.h"
#include "core/timer.h"
#include "kernels/cpu/gemm.h"
#include "measure/reference_gemm.h"
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
  l.optimizer =
      rc.train.optimizer.name == OptimizerName::kMuon ? plan::OptimizerKind::kMuon : plan::OptimizerKind::kAdamW;
  l.moments =
      rc.train.optimizer.state_precision == StatePrecision::kBf16 ? plan::Precision::kBf16 : plan::Precision::kFp32;
  l.recompute = rc.train.activation_checkpointing == ActivationCheckpointing::kLayers ? plan::Recompute::kFull
                                                                                      : plan::Recompute::kNone;
  auto p = plan::resolve(l, rc.model, rc.train.seq_len, cpu);
  if (!p) return 0.0;
  plan::MemoryBreakdown m =
      plan::memory_per_gpu(rc.model, plan::model_stats(rc.model, rc.train.seq_len), p.value(), cpu);
  // The plan counts the default's packed weights (a model file has no [train]); this run knows its own.
  if (!rc.train.pack_weights || rc.stream.enabled) m.runtime = 0;
  return m.total();
}

}  // namespace

Result<nlohmann::json> run_step_bench(const RunConfig& cfg, const StepBenchOptions& bench, Comm& world) {
  const int ranks = world.size();
  const bool streaming = cfg.stream.enabled;
  const bool bf16 = cfg.train.precision == MatmulPrecision::kBf16;
  PeakResult peak = measure_peak(0.3, num_threads());
  peak.fp32_gflops *= ranks;  // every rank measured its own cores
  peak.bf16_gflops *= ranks;
  peak.amx_bf16_gflops *= ranks;
  const char* peak_kind = bf16 ? bf16_matmul_peak(peak).kind : "fp32_fma";
  const double peak_gflops = bf16 ? bf16_matmul_peak(peak).gflops : peak.fp32_gflops;
  const MatmulPrecision ref_prec = bf16 ? MatmulPrecision::kBf16 : MatmulPrecision::kFp32;
  ReferenceGemm ref;
  const double gemm_best = ranks * ref.best_gflops(ref_prec);
  TrainerOptions opt;
  opt.peak_gflops = peak_gflops;
  opt.progress = false;
  opt.print_config = false;
  opt.comm = &world;
  // The benchmarked trainer and, with streaming, an in-place one of the same config stepped alternately.
  RunConfig in_place_cfg = cfg;
  in_place_cfg.stream = StreamConfig();
  std::unique_ptr<Trainer> streamed_or_only, in_place;
  for (const RunConfig* c : {&cfg, streaming ? static_cast<const RunConfig*>(&in_place_cfg) : nullptr}) {
    if (!c) continue;
    auto r = Trainer::create(*c, opt);
    if (!r) return r.status();
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
  for (int64_t s = 0; s < bench.steps; ++s) {
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
  const TrainConfig& tc = cfg.train;
  const double tokens = double(tc.batch_size * tc.seq_len * tc.grad_accum);
  const double model_gflops = median(step_gflops);
  nlohmann::json j;
  j["preset"] = bench.name;
  const OptimizerConfig& oc = cfg.train.optimizer;  // [optim]; its time is time_fraction.optimizer
  j["optimizer"] = std::string(oc.name == OptimizerName::kMuon ? "muon" : "adamw") + (oc.hyperball ? "+hyperball" : "");
  j["precision"] = bf16 ? "bf16" : "fp32";
  // balanced: counter-based uniform routing (model.router_force_balance); learned: the model's router.
  j["routing"] = cfg.model.router_force_balance ? "balanced" : "learned";
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
  // Every timed step and the reference measured right after it, for
  // statistics beyond the median (the fastest step of a noisy host's run).
  j["step_times_s"] = times;
  j["gemm_after_step_gflops_per_s"] = ref_after;
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
  j["packed_weights_bytes"] = gemm_packed_bytes();  // inside the peak: the copies train.pack_weights keeps
  if (ranks == 1 && !streaming) {
    const double planned = planner_bytes(cfg);
    j["planner_bytes"] = planned;
    j["peak_rss_over_planner"] = planned > 0 ? j["peak_rss_bytes"].get<double>() / planned : 0.0;
  }
  if (streaming) {
    const double base = median(in_place_times);
    j["stream"] = {{"store", cfg.stream.store == StreamStore::kDisk ? "disk" : "host"},
                   {"prefetch_layers", cfg.stream.prefetch_layers},
                   {"bytes_in_per_step", last.stream_bytes_in},
                   {"bytes_out_per_step", last.stream_bytes_out},
                   {"stall_s_median", median(stall)},
                   {"compute_memory_bytes", last.compute_memory_bytes},
                   {"store_bytes", last.store_bytes},
                   {"in_place_step_time_s", base},
                   {"in_place_tokens_per_s", tokens / base},
                   {"overhead", step_s / base - 1.0}};
  }
  return j;
}

}  // namespace mt
