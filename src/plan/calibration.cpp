// calibration.cpp — see calibration.h.
#include "plan/calibration.h"

#include <cmath>

#include "core/check.h"
#include "plan/model_stats.h"
#include "plan/perf.h"

namespace mt::plan {

const std::vector<MegatronRow>& megatron_h100_rows() {
  static const std::vector<MegatronRow> kRows = {
      {"1.7B", 16, 2048, 24, 1, 1, 48, 192, 408.8, 0.41},
      {"7.1B", 32, 4096, 30, 2, 1, 96, 192, 465.9, 0.47},
      {"16B", 48, 6144, 32, 4, 1, 192, 192, 489.1, 0.49},
      {"32B", 56, 7168, 48, 8, 1, 384, 192, 459.6, 0.46},
      {"70B", 64, 8192, 84, 8, 2, 768, 384, 419.7, 0.42},
      {"119B", 80, 10240, 92, 8, 4, 1536, 768, 420.5, 0.43},
      {"177B", 96, 12288, 96, 8, 6, 2304, 1152, 432.8, 0.44},
      {"314B", 128, 16384, 96, 8, 8, 3072, 1536, 474.4, 0.48},
      {"462B", 144, 18432, 112, 8, 16, 6144, 3072, 459.9, 0.47},
  };
  return kRows;
}

double megatron_flops_per_token(int64_t hidden, int64_t layers, int64_t vocab, int64_t seq_len) {
  const double h = double(hidden), L = double(layers);
  return 72.0 * L * h * h * (1.0 + double(seq_len) / (6.0 * h) + double(vocab) / (12.0 * h * L));
}

// A dense decoder of global layers with an untied head: every calibration
// table's model (Megatron's GPT rows, Llama 3 8B, the MPTs).
ModelConfig dense_model(int64_t vocab, int64_t d_model, int64_t layers, int64_t heads, int64_t kv_heads, int64_t d_ff) {
  ModelConfig m;
  m.vocab_size = vocab;
  m.d_model = d_model;
  m.n_layers = layers;
  m.n_heads = heads;
  m.n_kv_heads = kv_heads;
  m.layer_pattern = "G";
  m.tied_embeddings = false;
  m.d_ff = d_ff;
  m.n_experts = 0;
  return m;
}

CalibrationCase megatron_case(const MegatronRow& r, const EfficiencyModel& eff) {
  CalibrationCase k;
  // SwiGLU with the FLOPs of a 4h GELU MLP.
  k.model = dense_model(131072, r.hidden, r.layers, r.heads, r.heads, (8 * r.hidden + 2) / 3);

  ClusterConfig& c = k.cluster;
  c.source = "<megatron calibration>";
  c.device = *find_device("H100");
  c.gpus_per_rack = 8;
  c.racks = r.gpus / 8;
  c.scaleout_gbps = 50.0;  // 8 x 400 Gb/s InfiniBand per DGX H100 node
  c.eff = eff;

  LayoutConfig& l = k.layout;
  l.source = "<megatron calibration>";
  l.tp = r.tp;
  l.pp = r.pp;
  l.zero_stage = 1;
  // Pipelined rows: micro-batches of one sequence (m = 4 pp per step) on the interleaved schedule with
  // two model chunks per stage. Unpipelined rows: the 4 sequences per GPU in one micro-batch.
  l.micro_batch = r.pp == 1 ? r.batch / (r.gpus / r.tp) : 1;
  l.global_batch = r.batch;
  l.seq_len = k.seq_len;
  l.grads = Precision::kFp32;  // Megatron reduces bf16 runs' gradients in fp32
  l.tp_overlap = true;
  l.dp_overlap = true;
  if (r.pp > 1) {
    l.schedule = PipeSchedule::kInterleaved;
    l.virtual_stages = 2;
  }
  return k;
}

namespace {

// A row's planner inputs, resolved once; only the efficiency model varies during a fit.
struct Prepared {
  MegatronRow row;
  CalibrationCase k;
  Parallel par;
  ModelStats stats;
  double megatron_flops_per_step = 0;
};

Prepared prepare(const MegatronRow& r) {
  Prepared p;
  p.row = r;
  p.k = megatron_case(r, EfficiencyModel{});
  auto par = resolve(p.k.layout, p.k.model, p.k.seq_len, p.k.cluster);
  MT_CHECK(par.is_ok(), "calibration row {}: {}", r.name, par.status().message());
  p.par = *par;
  p.stats = model_stats(p.k.model, p.k.seq_len);
  p.megatron_flops_per_step =
      megatron_flops_per_token(r.hidden, r.layers, 131072, p.k.seq_len) * double(r.batch) * double(p.k.seq_len);
  return p;
}

CalibrationResult evaluate(const Prepared& p, const EfficiencyModel& eff) {
  ClusterConfig cl = p.k.cluster;
  cl.eff = eff;
  const StepTime st = step_time(p.k.model, p.stats, p.par, cl);
  CalibrationResult out;
  out.name = p.row.name;
  out.step_s = st.step_s;
  out.measured_tflops = p.row.tflops_per_gpu;
  out.predicted_tflops = p.megatron_flops_per_step / st.step_s / double(p.row.gpus) / 1e12;
  out.measured_mfu = p.row.mfu;
  out.predicted_mfu = out.predicted_tflops / 989.0;
  out.rel_error = out.predicted_tflops / out.measured_tflops - 1.0;
  return out;
}

double log_sse(const std::vector<Prepared>& rows, const EfficiencyModel& e) {
  double sum = 0;
  for (const Prepared& p : rows) {
    const double err = std::log1p(evaluate(p, e).rel_error);
    sum += err * err;
  }
  return sum;
}

// Minimises f on [a, b] by golden-section search; returns the argmin.
template <typename F>
double golden_min(F f, double a, double b, int iters) {
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double x1 = b - phi * (b - a), x2 = a + phi * (b - a), f1 = f(x1), f2 = f(x2);
  for (int it = 0; it < iters; ++it) {
    if (f1 < f2) {
      b = x2, x2 = x1, f2 = f1;
      x1 = b - phi * (b - a), f1 = f(x1);
    } else {
      a = x1, x1 = x2, f1 = f2;
      x2 = a + phi * (b - a), f2 = f(x2);
    }
  }
  return 0.5 * (a + b);
}

EfficiencyModel fit_gemm(const std::vector<Prepared>& rows, const EfficiencyModel& base) {
  EfficiencyModel e = base;
  e.gemm = golden_min([&](double g) { EfficiencyModel x = base; x.gemm = g; return log_sse(rows, x); }, 0.3, 1.0, 32);
  return e;
}

std::vector<Prepared> prepare_all(const std::vector<MegatronRow>& rows) {
  std::vector<Prepared> out;
  for (const MegatronRow& r : rows) out.push_back(prepare(r));
  return out;
}

}  // namespace

CalibrationResult evaluate_row(const MegatronRow& r, const EfficiencyModel& eff) { return evaluate(prepare(r), eff); }

EfficiencyModel fit_gemm_efficiency(const std::vector<MegatronRow>& rows, const EfficiencyModel& base) {
  return fit_gemm(prepare_all(rows), base);
}

EfficiencyModel fit_efficiency(const std::vector<MegatronRow>& rows, const EfficiencyModel& base) {
  const std::vector<Prepared> prepared = prepare_all(rows);
  auto best_for = [&](double ew) {
    EfficiencyModel x = base;
    x.elementwise = ew;
    return fit_gemm(prepared, x);
  };
  const double ew = golden_min([&](double v) { return log_sse(prepared, best_for(v)); }, 1.0, 5.0, 24);
  return best_for(ew);
}

const std::vector<GenerationRow>& llama3_8b_generation_rows() {
  // Megatron-Bridge docs/performance-summary.md, 25.11 container, LLAMA3_8B, FP8-CS, 8 GPUs, GBS 128,
  // sequence 8192, TP = PP = CP = 1: (system, MBS, FSDP, tokens/s/GPU).
  static const std::vector<GenerationRow> kRows = {
      {"DGX-H100", "H100", 1, 3, 14451},
      {"DGX-B200", "B200", 2, 1, 30624},
      {"DGX-GB200", "GB200", 2, 1, 31508},
      {"DGX-GB300", "GB300", 2, 1, 37556},
  };
  return kRows;
}

const std::vector<GenerationRow>& mpt_a100_h100_rows() {
  // llm-foundry scripts/train/benchmarking/README.md: "H100 80GB BF16" and "A100 80GB with 1600 Gbps
  // node-node interconnect (RoCE)" tables, rows at SeqLen 2048, 8 GPUs, FULL_SHARD, activation
  // checkpointing False: (model, MBS, global batch, tokens/s/GPU). MPT: MHA, GELU MLP of 4 d (planned as a
  // SwiGLU of equal FLOPs, d_ff = 8 d / 3), vocabulary 50,432.
  auto mpt = [](const char* system, const char* device, const char* name, int64_t d, int64_t layers, int64_t heads,
                int64_t mbs, int64_t gbs, double tps) {
    GenerationRow r;
    r.system = system, r.device = device, r.model = name;
    r.micro_batch = mbs, r.zero_stage = 3, r.tokens_per_s_per_gpu = tps;
    r.d_model = d, r.n_layers = layers, r.n_heads = heads, r.n_kv_heads = heads, r.d_ff = (8 * d + 2) / 3;
    r.vocab = 50432, r.seq_len = 2048, r.global_batch = gbs, r.fp8 = false;
    return r;
  };
  static const std::vector<GenerationRow> kRows = {
      mpt("H100 80GB", "H100", "MPT-1B", 2048, 24, 16, 14, 112, 45455),
      mpt("A100 80GB", "A100", "MPT-1B", 2048, 24, 16, 14, 448, 20513),
      mpt("H100 80GB", "H100", "MPT-7B", 4096, 32, 32, 6, 48, 10643),
      mpt("A100 80GB", "A100", "MPT-7B", 4096, 32, 32, 6, 96, 4641),
      mpt("H100 80GB", "H100", "MPT-13B", 5120, 40, 40, 2, 16, 4792),
      mpt("A100 80GB", "A100", "MPT-13B", 5120, 40, 40, 2, 48, 2262),
  };
  return kRows;
}

CalibrationCase generation_case(const GenerationRow& r, const EfficiencyModel& eff) {
  CalibrationCase k;
  k.seq_len = r.seq_len;
  // Llama 3 8B (Dubey et al. 2024, Table 3), or an MPT.
  k.model = dense_model(r.vocab, r.d_model, r.n_layers, r.n_heads, r.n_kv_heads, r.d_ff);
  ClusterConfig& c = k.cluster;
  c.source = "<generation calibration>";
  c.device = *find_device(r.device);
  c.gpus_per_rack = c.device.gpus_per_domain;
  c.racks = 1;
  c.eff = eff;
  LayoutConfig& l = k.layout;
  l.source = "<generation calibration>";
  l.gpus = 8;
  l.zero_stage = r.zero_stage;
  l.micro_batch = r.micro_batch;
  l.global_batch = r.global_batch;
  l.seq_len = k.seq_len;
  l.gemm = r.fp8 ? GemmPrecision::kFp8 : GemmPrecision::kBf16;
  l.grads = Precision::kFp32;
  return k;
}

double generation_tokens_per_s(const GenerationRow& r, const EfficiencyModel& eff) {
  const CalibrationCase k = generation_case(r, eff);
  auto par = resolve(k.layout, k.model, k.seq_len, k.cluster);
  MT_CHECK(par.is_ok(), "generation row {}: {}", r.system, par.status().message());
  const StepTime st = step_time(k.model, model_stats(k.model, k.seq_len), *par, k.cluster);
  return st.tokens_per_s / double(par->gpus);
}

double generation_gemm_fit(const GenerationRow& r, const EfficiencyModel& base) {
  return golden_min(
      [&](double g) {
        EfficiencyModel e = base;
        e.gemm = g;
        const double err = std::log(generation_tokens_per_s(r, e) / r.tokens_per_s_per_gpu);
        return err * err;
      },
      0.2, 1.0, 40);
}

std::vector<CalibrationResult> leave_one_out(const std::vector<MegatronRow>& rows, const EfficiencyModel& base) {
  std::vector<CalibrationResult> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    std::vector<MegatronRow> others;
    for (size_t j = 0; j < rows.size(); ++j)
      if (j != i) others.push_back(rows[j]);
    out.push_back(evaluate_row(rows[i], fit_efficiency(others, base)));
  }
  return out;
}

}  // namespace mt::plan
