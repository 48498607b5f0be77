// activations.h — activation memory of one transformer layer, op by op: what
// each op keeps for its backward pass, in bytes per token of a micro-batch on
// one GPU, and which recomputation choice drops it. memory.cpp sums these per
// pipeline stage; docs/planner.md lists every term with its source.
//
// The bookkeeping is Korthikanti et al. 2022 ("Reducing Activation
// Recomputation in Large Transformer Models", section 4): a GPT-3 block keeps
// 34 s b h + 5 a s^2 b bytes (s sequence, b micro-batch, h hidden, a heads,
// bf16, dropout, materialised attention); with tensor + sequence parallelism
// every term is divided by t; selective recomputation drops the 5 a s^2 b
// attention-core term; full recomputation keeps only the layer input 2 s b h.
// Here the same accounting is done for this architecture (RMSNorm, SwiGLU,
// GQA, no dropout, optional flash attention, MoE), one function per term.
// Legend: D model dim, H heads, Hkv' = max(Hkv, t) kv heads (replicated when t
// exceeds them), Dh head dim, F ffn / expert dim, E experts, K top-k, Dl
// latent dim, Din expert input dim (Dl or D), r expert rows per token on the
// busiest rank, t tensor-parallel degree, keys per query; MLA: Dq, Dc query
// and kv latents, Dn + Dr q-k head dim, Dv value head dim.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"

namespace mt::plan {

// What recomputing a module drops. Selective recomputation (Korthikanti) is
// {kCoreAttn}; the others are the module-level choices of Megatron-Core's
// recompute_modules and of DeepSeek-V3 (report section 3.2.3: RMSNorm and
// MLA up-projections recomputed in backward). Full recomputation drops
// everything but the layer input.
enum class ActModule : uint32_t {
  kKept = 0,               // kept unless the whole layer is recomputed
  kNorm = 1u << 0,         // RMSNorm outputs (recompute "norm")
  kCoreAttn = 1u << 1,     // attention probabilities (recompute "core_attn")
  kSwiglu = 1u << 2,       // SwiGLU products: dense, routed and shared (recompute "swiglu")
  kExperts = 1u << 3,      // routed experts' hidden units (recompute "experts")
  kSharedExperts = 1u << 4,  // shared experts' hidden units (recompute "shared_experts")
  // q, k, v (and qk-norm inputs) recomputed from the kept norm output: DeepSeek-V3 recomputes its MLA
  // up-projections this way (report 3.2.3); for GQA it is one extra QKV GEMM (recompute "qkv").
  kQkv = 1u << 5,
  // Routed experts' outputs are not kept: the gate gradient dL/dg = dy . (W2 z) equals (W2^T dy) . z, and
  // W2^T dy and z are at hand in the expert's backward, so no FLOPs are added ("expert_output").
  kExpertOutput = 1u << 6,
};
using RecomputeMask = uint32_t;
inline constexpr RecomputeMask kRecomputeNothing = 0;

// Module names accepted by memory.recompute_modules, in ActModule bit order.
const std::vector<std::string>& recompute_module_names();
// The mask of a list of names (names are checked by the layout loader).
RecomputeMask recompute_mask(const std::vector<std::string>& names);

struct ActivationOptions {
  int64_t tp = 1;                // t, with sequence parallelism (norm regions split by t too)
  int64_t seq_len = 0;           // keys of a global-attention query (the longest)
  bool flash_attention = true;   // false: the probabilities are stored
  double rows_per_token = 0;     // r: expert rows per token on the busiest EP rank (capacity or K x imbalance)
  double elem_bytes = 2;         // stored activations: 2 bf16 (GPU), 4 fp32 (the CPU trainer)
  double stat_bytes = 4;         // fp32 norm statistics, logsumexp, router probabilities
  // DeepSeek-V3 (report 3.3.3): inputs of FP8 linear layers are cached in FP8 (1 byte) with one fp32
  // scale per 128 values: 1 + 4/128 bytes per element. 0 = off.
  double fp8_cache_bytes = 0;
};

// One stored tensor of one layer.
struct ActTerm {
  std::string op;               // e.g. "attn.qkv": which op keeps it
  RecomputeMask modules = 0;    // recomputing any of these drops the term (0: only full recomputation)
  double bytes_per_token = 0;   // per GPU, per token of the micro-batch
};

// Every term of layer `l`, in forward order.
std::vector<ActTerm> layer_activation_terms(const ModelConfig& c, int64_t l, const ActivationOptions& o);

// Every term of one multi-token-prediction module (DeepSeek-V3 section 2.2), named "mtp.*": the hidden
// state and the next token's embedding before their RMSNorms, the projection's input (both normalised,
// 2D), then the terms of a block like the last layer. Its head's logits are counted with the LM head's.
std::vector<ActTerm> mtp_module_terms(const ModelConfig& c, const ActivationOptions& o);

// Sum of the terms that `mask` does not recompute.
double activation_bytes_per_token(const std::vector<ActTerm>& terms, RecomputeMask mask);

// Under full recomputation only the layer input (the residual stream) is kept: D / t elements per token.
double layer_input_bytes_per_token(const ModelConfig& c, const ActivationOptions& o);

// Korthikanti et al. 2022, eq. (1)-(5): bytes per layer of a GPT-3 block (bf16, dropout, LayerNorm,
// GeLU MLP of 4h, materialised attention). The reference the per-op terms are checked against.
enum class KorthikantiCase { kNoParallel, kTensor, kTensorSequence, kTensorSequenceSelective, kFull };
double korthikanti_layer_bytes(double s, double b, double h, double a, double t, KorthikantiCase k);

}  // namespace mt::plan
