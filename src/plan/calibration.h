// calibration.h — the published Megatron-LM H100 weak-scaling table
// (shared/reference/hardware.md) as planner inputs, and the fit of the
// efficiency model's one free constant (sustained GEMM efficiency) to it.
// Every other constant is a physical figure; docs/planner.md states them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "plan/cluster.h"
#include "plan/layout.h"

namespace mt::plan {

struct MegatronRow {
  std::string name;   // "1.7B"
  int64_t heads, hidden, layers, tp, pp, gpus, batch;
  double tflops_per_gpu;  // published, Megatron's FLOP count
  double mfu;             // published, against 989 TFLOP/s
};
const std::vector<MegatronRow>& megatron_h100_rows();

// Megatron-LM's FLOPs per token for GPT blocks (4h GELU MLP, untied
// embeddings, attention counted over the full s x s square):
// 72 L h^2 (1 + s / (6h) + V / (12 h L)).
double megatron_flops_per_token(int64_t hidden, int64_t layers, int64_t vocab, int64_t seq_len);

// Planner inputs for a row: the GPT block as a SwiGLU model of equal matmul
// FLOPs (d_ff = 8h/3), vocab 131072, seq 4096, DP 48, distributed optimizer
// (ZeRO-1, fp32 gradient reduction), sequence parallelism, TP and DP overlap;
// pipelined rows: micro-batch 1, interleaved schedule with 2 chunks per
// stage; others: one micro-batch per step. docs/planner.md lists them all.
struct CalibrationCase {
  ModelConfig model;
  LayoutConfig layout;
  ClusterConfig cluster;
  int64_t seq_len = 4096;
};
CalibrationCase megatron_case(const MegatronRow& r, const EfficiencyModel& eff);

struct CalibrationResult {
  std::string name;
  double measured_tflops = 0, predicted_tflops = 0;  // per GPU, Megatron's FLOP count
  double measured_mfu = 0, predicted_mfu = 0;        // Megatron's definition (vs 989 TFLOP/s)
  double rel_error = 0;                              // predicted / measured - 1 (throughput)
  double step_s = 0;                                 // predicted
};
CalibrationResult evaluate_row(const MegatronRow& r, const EfficiencyModel& eff);

// Least squares on log throughput over `rows`, for EfficiencyModel::gemm
// (golden-section search in [0.3, 1]); other fields of `base` are kept.
EfficiencyModel fit_gemm_efficiency(const std::vector<MegatronRow>& rows, const EfficiencyModel& base);
// The same for gemm and the element-wise traffic factor together (factor in [1, 5]).
EfficiencyModel fit_efficiency(const std::vector<MegatronRow>& rows, const EfficiencyModel& base);

// Leave-one-out: for each row, fit_efficiency on the other rows, then predict
// that row. The errors are the planner's stated out-of-sample error on the
// only calibration data it is given.
std::vector<CalibrationResult> leave_one_out(const std::vector<MegatronRow>& rows, const EfficiencyModel& base);

// ---- Efficiency by GPU generation ------------------------------------------
// One workload timed by one framework on each generation: Llama 3 8B
// pre-training, FP8 (current scaling), 8 GPUs, sequence 8,192, global batch
// 128, from NVIDIA's Megatron-Bridge performance summary (NeMo 25.11
// container; docs/reference-tables/generations.md). Tokens per second per GPU
// carries no FLOP convention. The planner is calibrated on Hopper (the
// Megatron table above); a generation's sustained GEMM fraction is Hopper's
// times the ratio of the fractions that reproduce the two rows, so what the
// rows share (the FP8 recipe, the framework, the model) cancels.
struct GenerationRow {
  std::string system;  // "DGX-H100"
  std::string device;  // the device preset: "H100", "B200", "GB200"
  int64_t micro_batch = 1;
  int64_t zero_stage = 1;  // FSDP = 3; DDP with the distributed optimizer = 1
  double tokens_per_s_per_gpu = 0;
  // The workload (defaults: Megatron-Bridge's Llama 3 8B FP8 rows).
  std::string model = "Llama 3 8B";
  int64_t d_model = 4096, n_layers = 32, n_heads = 32, n_kv_heads = 8, d_ff = 14336, vocab = 128256;
  int64_t seq_len = 8192, global_batch = 128;
  bool fp8 = true;
};
const std::vector<GenerationRow>& llama3_8b_generation_rows();
// Ampere against Hopper in one framework: MosaicML llm-foundry's MPT benchmark tables (BF16, FSDP full
// shard, sequence 2,048, 8 GPUs, no activation checkpointing), pairs of the same model on H100 80GB and
// A100 80GB, H100 first in each pair.
const std::vector<GenerationRow>& mpt_a100_h100_rows();
CalibrationCase generation_case(const GenerationRow& r, const EfficiencyModel& eff);
// Predicted tokens/s per GPU of a row under `eff`.
double generation_tokens_per_s(const GenerationRow& r, const EfficiencyModel& eff);
// The GEMM efficiency that reproduces a row (golden-section search in [0.2, 1]), other fields of `base` kept.
double generation_gemm_fit(const GenerationRow& r, const EfficiencyModel& base);

}  // namespace mt::plan
