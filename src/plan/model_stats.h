// model_stats.h — parameter counts of a ModelConfig by layer and kind (the
// same tensors model/weights.cpp lays out), training FLOPs per token (the
// count `moetrain bench` uses, model/flops.h) and the inference cost of the
// architecture: KV-cache bytes and forward FLOPs per token.
// Legend: D model dim, H heads, Hkv kv heads, Dh head dim, F ffn/expert
// hidden, E experts, K top-k, Dl latent dim, V vocab, S context length;
// MLA: Dq query latent, Dc kv latent, Dn / Dr q-k dims without / with RoPE,
// Dv value dim (model/config.h).
#pragma once
#include <cstdint>
#include <vector>

#include "model/config.h"
#include "model/kv_cache.h"
#include "model/param_count.h"

namespace mt::plan {

// Per-layer counts: model/param_count.h (the trainer counts with them too).
using LayerParams = ::mt::LayerParamCount;
using ::mt::layer_params;

struct ModelStats {
  std::vector<LayerParams> layers;
  int64_t embed = 0;            // (V, D)
  int64_t head = 0;             // (V, D) when untied, else 0
  int64_t final_norm = 0;
  int64_t total = 0;            // every parameter, multi-token-prediction modules included
  int64_t expert_params = 0;    // routed experts, all layers (MTP blocks included)
  // Multi-token prediction (DeepSeek-V3 section 2.2), per module: the block (like the last layer) and the
  // rest: RMSNorms on the hidden state and on the embedding, the projection (D, 2D) and the final norm
  // before the shared head (the released checkpoint's shared_head.norm). The embedding and head are shared.
  LayerParams mtp_block;
  int64_t mtp_extra = 0;        // 2D^2 + 3D per module
  int64_t mtp_params = 0;       // mtp_depth x (block + extra)
  int64_t active_matmul = 0;    // model/weights.h active_matmul_params
  int64_t active_params = 0;    // active_matmul + norms (the LM head counts; the embedding lookup does not)
  int64_t moe_layers = 0;
  double train_flops_per_token = 0;     // model/flops.h flops_per_token (forward + backward)
  // The same count with attention over the full square (PaLM's and Megatron-LM's convention: every query
  // meets every key of its span: the sequence on global layers, the window on sliding-window layers,
  // documents ignored). MFU is reported in the causal-half count above; this one is printed beside it
  // when the two differ by more than kMfuConventionGap.
  double train_flops_full_square = 0;
  // Inference, bf16 cache, context S = seq_len.
  double kv_bytes_per_token = 0;        // every layer's K and V for one token (MLA: its latent and RoPE key)
  double kv_bytes_per_sequence = 0;     // S tokens; sliding-window layers keep only `window` entries
  double state_bytes_per_sequence = 0;  // gated-delta layers' recurrent states (fp32), the same at every S
  double prefill_flops_per_token = 0;   // forward only, mean over a prompt of S tokens
  double decode_flops_per_token = 0;    // forward only, one new token at context S (MLA: absorbed form)
  int64_t seq_len = 0;
};

// Relative gap between the two MFU conventions above which a plan prints both.
inline constexpr double kMfuConventionGap = 0.05;
// The ratio of the full-square count to the causal-half one (>= 1).
inline double full_square_ratio(const ModelStats& s) {
  return s.train_flops_per_token > 0 ? s.train_flops_full_square / s.train_flops_per_token : 1.0;
}

// doc_tokens: batch.document_tokens (training FLOPs of packed, masked documents); 0 = one per sequence.
ModelStats model_stats(const ModelConfig& c, int64_t seq_len, int64_t doc_tokens = 0);

// Cache elements per token and state elements per sequence of a layer: model/kv_cache.h (the decoder's
// cache is sized by the same functions).
using ::mt::kv_cache_elems;
using ::mt::state_elems;

// Mean keys per query over a sequence of T tokens (closed form of
// kernels/cpu attention_mean_keys): (T + 1) / 2 on global layers, min(i + 1, w) averaged on local ones.
double mean_keys(int64_t T, int64_t window);
// The same for sequences packed with documents of doc_tokens each (the last cut at T; <= 0 or >= T: one).
double mean_keys(int64_t T, int64_t window, int64_t doc_tokens);

// Keys a query at position i (0-based) attends to: min(i + 1, window) on
// sliding-window layers, i + 1 on global ones.
double keys_at(int64_t i, int64_t window);

}  // namespace mt::plan
