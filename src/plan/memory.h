// memory.h — memory per GPU, itemised: parameters, gradients, optimizer
// state, master weights, activations (with and without recomputation),
// communication buffers, MoE capacity (all-to-all) buffers, runtime and the
// allocator overhead (layout.h: allocator_overhead). Every pipeline stage is
// evaluated and the fullest one reported. GPU activations are summed op by op
// from activations.h (Korthikanti et al. 2022 for this architecture, MoE
// dispatch and capacity rows included); for CPU clusters the activation figure
// is the CPU trainer's own allocation (model/transformer.h), so it is exact.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "plan/activations.h"
#include "plan/layout.h"
#include "plan/model_stats.h"

namespace mt::plan {

struct MemoryItem {
  std::string key;    // JSON key, e.g. "optimizer_state"
  std::string label;  // human label
  double bytes = 0;
};

struct MemoryBreakdown {
  double parameters = 0;           // working weights (bf16, or fp32)
  double gradients = 0;            // accumulated gradients
  double optimizer_state = 0;      // AdamW m and v; Muon: momentum of its matrices, AdamW m and v of the rest; fp32
  double optimizer_workspace = 0;  // Muon: whole-matrix exchange buffers and Newton-Schulz scratch (optim/optimizer.h)
  double master_weights = 0;       // fp32 copy of bf16 weights
  double activations = 0;          // saved for backward, all micro-batches in flight, chosen recompute
  double comm_buffers = 0;         // NCCL workspaces, FSDP gather / reduce buckets, TP and PP buffers
  double moe_capacity_buffers = 0; // all-to-all dispatch/combine buffers of one MoE layer
  double runtime = 0;              // CUDA context and library workspaces
  double fragmentation = 0;        // allocator overhead on the dynamic part (activations and buffers)
  // Activations under each recomputation choice (index = Recompute), same stage.
  double activations_by_recompute[3] = {0, 0, 0};
  // Activations of the reported stage per op ("attn.qkv", "experts.gate_up", ...), all micro-batches in
  // flight, under the chosen recomputation (dropped ops count 0).
  std::vector<MemoryItem> activation_ops;
  int64_t stage = 0;               // pipeline stage reported (the fullest)
  int64_t layers_in_stage = 0;
  double in_flight = 1;            // micro-batches whose activations the stage holds at peak
  double capacity = 0;             // device memory, bytes
  // Offload: training state this GPU keeps in the offload tier (host memory or NVMe), and its share of
  // the tier's capacity (per node / GPUs per node). Not part of total().
  double offloaded = 0;
  double offload_capacity = 0;
  double total() const;
  bool fits() const { return total() <= capacity && offloaded <= offload_capacity; }
  std::vector<MemoryItem> items() const;
};

// The activation terms' options for a layout: t, flash attention, expert rows
// per token (capacity slots, or K x imbalance when dropless), bf16 with fp32
// statistics, FP8 caching.
ActivationOptions activation_options(const ModelConfig& c, const Parallel& p);

// Muon's share of the parameters (the hidden matrices: attention, dense FFN,
// shared and routed experts, latent projections; the rest is AdamW's,
// optim/optimizer_config.h) and the Newton-Schulz scratch of its largest
// matrix, in floats (kernels/cpu/muon.h).
int64_t muon_params(const ModelConfig& c, const ModelStats& s);
int64_t muon_scratch_floats(const ModelConfig& c);

// Activation bytes one GPU stores per token of a micro-batch for layer `l`
// under the layout's selective and module recomputation (full recomputation
// is applied per stage by memory_per_gpu).
// The modules a layout recomputes besides full recomputation: memory.recompute_modules, plus the attention
// core under "selective". Memory drops their activations; step time pays their forward again (perf.cpp).
RecomputeMask layout_recompute_mask(const LayoutConfig& l);
double layer_activation_bytes_per_token(const ModelConfig& c, int64_t l, const Parallel& p);

// Micro-batches whose activations pipeline stage `stage` holds at its peak
// (GPipe m; 1F1B p - stage; interleaved per Megatron's warm-up count; ...).
double in_flight_microbatches(const Parallel& p, int64_t stage);

MemoryBreakdown memory_per_gpu(const ModelConfig& c, const ModelStats& s, const Parallel& p,
                               const ClusterConfig& cl);

// Parameters one GPU of pipeline stage `stage` holds, before ZeRO sharding:
// dense (attention, dense FFN, shared experts split by tp; norms, router and
// latent projections replicated; embedding on the first stage, head on the
// last) and routed experts (split by ep).
struct StageParams {
  double dense = 0;
  double experts = 0;
  double largest_layer = 0;  // one layer's dense + expert share (FSDP gather and bucket sizes)
};
StageParams stage_params(const ModelConfig& c, const ModelStats& s, const Parallel& p, int64_t stage);

// Bytes of K and V that one GPU sends per ring-attention step (context parallelism, Megatron-Core /
// Llama 3): its micro-batch's local tokens, 2 Hkv' Dh values each for GQA (Hkv' = max(Hkv, t)),
// divided by t; for MLA its compressed latent and RoPE key, Dc + Dr values a token. bf16.
double cp_kv_bytes(const ModelConfig& c, const Parallel& p);
// The same for a sliding-window layer of `window`: only the window - 1 rows before a chunk move.
double cp_halo_bytes(const ModelConfig& c, const Parallel& p, int64_t window);

// Layers [first, first + count) of pipeline stage `stage` (the first L % pp stages get one more).
std::pair<int64_t, int64_t> stage_layers(int64_t n_layers, int64_t pp, int64_t stage);

}  // namespace mt::plan
