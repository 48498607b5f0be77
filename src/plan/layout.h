// layout.h — how a run is laid out on the cluster: tensor (TP), pipeline (PP,
// with its schedule), expert (EP) and data parallelism (DP, with the ZeRO /
// FSDP stage), batch geometry, activation recomputation, offload, precision,
// overlap switches and checkpointing. Loaded strictly from
// configs/layouts/*.toml; resolve() checks it against a model and a cluster
// and derives the counts every formula needs.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "model/config.h"
#include "plan/attention_rate.h"
#include "plan/cluster.h"

namespace mt {
class ConfigSchema;
}  // namespace mt

namespace mt::plan {

enum class PipeSchedule { kGpipe, k1F1B, kInterleaved, kZeroBubble, kDualPipe };
enum class Recompute { kNone, kSelective, kFull };
// The device allocator behind the activations and buffers: it decides how much
// memory is reserved beyond what live tensors hold (see allocator_overhead).
enum class Allocator { kCaching, kExpandable, kArena };
// Offload (ZeRO-Offload / ZeRO-Infinity, Rajbhandari et al. 2021; Cerebras MemoryX weight streaming):
// kOptimizer keeps master weights and moments in host memory; kParams keeps every piece of training
// state (weights, gradients, master weights, optimizer state) in the offload tier and streams each
// layer's weights in ahead of its forward and backward, its gradients out after its backward, with the
// optimizer update applied at the store.
enum class Offload { kNone, kOptimizer, kParams };
enum class OffloadTier { kHost, kNvme };
enum class Precision { kBf16, kFp32 };
enum class GemmPrecision { kBf16, kFp8 };
enum class OptimizerKind { kAdamW, kMuon };
// ZeRO-2's gradients, memory and communication together (Rajbhandari et al. 2020). kSharded: each rank
// holds its gradient shard only, so every micro-batch's gradients are reduce-scattered into it as backward
// produces them (DeepSpeed ZeRO-2 under gradient accumulation). kFull: a full-size gradient buffer
// accumulates over the micro-batches and is reduce-scattered once per step (Megatron's distributed
// optimizer): gradient memory as ZeRO-1. A sharded-gradient stage reduced once per step is not offered:
// no framework runs it, and it undercounts either the memory or the traffic.
enum class Zero2Grads { kSharded, kFull };

// Every key of a layout file but the phases (LayoutConfig adds them below).
struct LayoutSettings {
  std::string source;
  std::string name;                       // [layout] name
  // [parallel]
  int64_t tp = 1;                         // tensor parallel (Megatron, with sequence parallelism)
  int64_t pp = 1;                         // pipeline stages
  // Context parallel (ring attention; Megatron-Core, Llama 3 section 3.3.2): each sequence in 2 cp chunks,
  // rank i holding chunks i and 2cp-1-i so causal work is balanced; K and V go round the ring.
  int64_t cp = 1;
  PipeSchedule schedule = PipeSchedule::k1F1B;
  int64_t virtual_stages = 1;             // interleaved schedule: model chunks per stage
  int64_t first_stage_layers = -1;        // transformer layers on the first stage (0 = embedding only); -1 = even split
  int64_t last_stage_layers = -1;         // transformer layers on the last stage (0 = head only); -1 = even split
  int64_t ep = 1;                         // expert parallel (carved out of dp x cp x tp; experts not TP-split)
  int64_t dp = 0;                         // data parallel; 0 = every GPU not used by tp x pp
  int64_t zero_stage = 1;                 // 0 none, 1 optimizer, 2 + gradients, 3 + parameters (FSDP)
  bool reshard_after_forward = true;      // ZeRO-3: free gathered weights after forward (false: keep them to backward)
  Zero2Grads zero2_grads =
      Zero2Grads::kSharded;               // ZeRO-2: sharded gradients reduced per micro-batch, or full ones per step
  int64_t gpus = 0;                       // GPUs in the job; 0 = all usable GPUs of the cluster
  // Streaming multiprocessors held by communication kernels that run beside the computation (DeepSeek-V3's
  // DualPipe with its dispatch/combine kernels: 20 of the H800's 132, report sec. 3.2.2): the compute kernels
  // run on the rest, at (gpu.sms - comm_sms) / gpu.sms of the device's rates; communication is unchanged.
  int64_t comm_sms = 0;
  // [batch]
  int64_t micro_batch = 1;                // sequences per micro-batch per pipeline
  int64_t global_batch = 0;               // sequences per optimizer step (required)
  int64_t seq_len = 0;                    // 0 = the model file's train.seq_len
  // Mean tokens per document of sequences packed with several and document-masked
  // (train.document_mask): attention counts the keys within a token's document. 0 = a sequence is one document.
  int64_t document_tokens = 0;
  // [memory]
  Recompute recompute = Recompute::kNone;
  // Further modules recomputed in backward (plan/activations.h): "norm", "core_attn", "swiglu",
  // "experts", "shared_experts", "qkv", "expert_output"; they add to `recompute` (none or selective).
  std::vector<std::string> recompute_modules;
  bool fp8_activations = false;           // inputs of FP8 linear layers cached in FP8 (DeepSeek-V3); needs gemm = fp8
  Offload offload = Offload::kNone;
  OffloadTier offload_tier = OffloadTier::kHost;  // where offloaded state lives (kParams)
  int64_t prefetch_layers = 1;            // kParams: layers fetched ahead of the one computing
  bool flash_attention = true;            // false: attention probabilities are materialised
  AttentionKernel attention_kernel = AttentionKernel::kFa2;  // flash kernel: its rate by key span (attention_rate.h)
  Allocator allocator = Allocator::kExpandable;
  double fragmentation = -1;              // allocator overhead, fraction of dynamic memory; -1 = the allocator's figure
  // [precision]
  Precision params = Precision::kBf16;    // bf16 = bf16 weights, fp32 master copy in the optimizer
  Precision grads = Precision::kFp32;     // gradient accumulation and reduction dtype
  Precision moments = Precision::kFp32;   // optimizer moments (AdamW m and v, Muon momentum); bf16 as DeepSeek-V3
  OptimizerKind optimizer = OptimizerKind::kAdamW;
  GemmPrecision gemm = GemmPrecision::kBf16;  // fp8: linear-layer GEMMs at the FP8 peak (router, head, attention stay bf16)
  // [comm]
  bool tp_overlap = true;                 // TP collectives overlapped with GEMMs
  bool dp_overlap = true;                 // gradient reduce / parameter gather overlapped with compute
  double ep_overlap = 0.0;                // fraction of all-to-all time hidden (DualPipe-style ~1)
  // [moe]
  double expert_imbalance = 1.0;          // dropless: busiest rank's expert rows / mean
  // [checkpoint]
  double checkpoint_interval_minutes = 0; // 0 = Daly's optimum
  bool checkpoint_async = false;          // training blocks only for the device-to-host copy
};

// ---- Training phases ([[phase]]) ------------------------------------------
// A run in phases, in order: each covers `tokens` of the budget and may set
// any layout key (batch.global_batch, batch.micro_batch, batch.seq_len,
// parallel.tp, ...); the keys it does not set keep the layout's values. This
// expresses batch-size schedules (Llama 3 405B: 4M tokens per step, then 8M,
// then 16M) and a final phase of another shape (a long-context extension).
// `ramp_from` ramps the global batch linearly in tokens over the phase from
// that many sequences to the phase's batch.global_batch, each step's batch
// rounded to the nearest multiple of dp x micro_batch (DeepSeek-V3: 3072 to
// 15360 sequences over the first 469B tokens). No phases: one phase, the
// layout itself, over the whole budget.
struct LayoutPhase {
  std::string name;            // a label for reports; "" = "phase N"
  double tokens = 0;           // tokens of this phase; 0 = what the others leave of the budget (one phase at most)
  int64_t ramp_from = 0;       // global batch (sequences) at the phase start; 0 = constant
  LayoutSettings layout;       // the whole layout of this phase: the file's keys with this phase's own applied
  // A phase of a run config (train/phase_schedule.h), step for step: the
  // global batch of each stretch of steps, in order. Set, it gives the
  // phase's steps and tokens exactly (no ceil, no ramp rounding); not a key.
  std::vector<std::pair<int64_t, int64_t>> batch_steps;  // (global batch, steps)
};

struct LayoutConfig : LayoutSettings {
  std::vector<LayoutPhase> phases;        // [[phase]]; empty = one phase, this layout
};

// The layout a phase runs: the phase's settings, no phases of its own.
LayoutConfig phase_layout(const LayoutPhase& ph);

std::string to_string(PipeSchedule s);
std::string to_string(Recompute r);
std::string to_string(Allocator a);

// Whether a rank holds only its shard of the gradients (ZeRO-3, or ZeRO-2 with sharded gradients); such
// gradients are reduce-scattered every micro-batch.
bool gradients_sharded(const LayoutSettings& l);
// One line for reports: how gradients are held and reduced under the layout's ZeRO stage.
std::string gradient_sync_text(const LayoutSettings& l);
// The share of a device's SMs left to compute kernels: (sms - comm_sms) / sms; 1 when none are reserved.
double compute_sm_share(const LayoutSettings& l, const DeviceSpec& d);
// One line for reports when parallel.comm_sms reserves SMs ("" when it does not).
std::string comm_sms_text(const LayoutSettings& l, const DeviceSpec& d);

// Memory the allocator reserves beyond live activations and buffers, as a
// fraction of them: memory.fragmentation when set, else the allocator's stated
// figure: caching 0.15 (PyTorch's default splitting allocator: GMLake, Guo et
// al. ASPLOS 2024, measured 15% fragmentation on average over eight LLM
// training workloads on A100-80GB), expandable 0.02 (virtual-memory segments,
// PyTorch expandable_segments: no segment boundaries, only page rounding and
// holes inside the one segment; GMLake reports such pools near-fragmentation-
// free, so this is a stated allowance, not a measurement), arena 0 (buffers
// sized once before step 1, as the CPU trainer does). Weights, gradients and
// optimizer state are allocated once at start and get no allowance.
double allocator_overhead(const LayoutConfig& l);

// Declares every key of a layout file, bound to `l`.
void declare_keys(mt::ConfigSchema& s, LayoutConfig& l);

Result<LayoutConfig> parse_layout(const std::string& text, const std::string& source,
                                  const std::vector<std::string>& overrides = {});
Result<LayoutConfig> load_layout(const std::string& path, const std::vector<std::string>& overrides = {});

// A layout checked against a model and a cluster, with derived counts.
struct Parallel {
  LayoutConfig cfg;
  int64_t gpus = 0;            // tp * cp * pp * dp; rank order tp, cp, (ep), dp, pp
  int64_t tp = 1, cp = 1, pp = 1, dp = 1, ep = 1, v = 1;
  int64_t edp = 1;             // expert data parallel: dp * cp * tp / ep
  int64_t seq_len = 0;
  // Tokens of one micro-batch on one GPU before the TP split: micro_batch * seq_len / cp.
  int64_t local_tokens() const { return micro_batch * seq_len / cp; }
  // Ranks that hold the same weights and reduce their gradients together: dp x cp.
  int64_t grad_replicas() const { return dp * cp; }
  int64_t micro_batch = 1;
  int64_t global_batch = 0;
  int64_t microbatches = 1;    // per pipeline per step: global_batch / (dp * micro_batch)
  int64_t layers_per_stage = 0;      // largest stage
  int64_t first_stage_layers = -1, last_stage_layers = -1;  // as in LayoutConfig
  int64_t tokens_per_step() const { return global_batch * seq_len; }
  std::vector<std::string> warnings;
};

// Layers [first, first + count) of pipeline stage `stage` of an `n_layers`
// model: the first and last stages hold the counts the layout fixes (0: only
// the embedding or the head), the others share the rest evenly (the first
// rest % stages get one more).
std::pair<int64_t, int64_t> stage_layers(const Parallel& p, int64_t n_layers, int64_t stage);

// `model_seq_len` is the model file's train.seq_len (used when the layout has none).
Result<Parallel> resolve(const LayoutConfig& l, const ModelConfig& m, int64_t model_seq_len,
                         const ClusterConfig& c);

}  // namespace mt::plan
