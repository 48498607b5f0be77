// model_stats.h — parameter counts of a ModelConfig by layer and kind (the
// same tensors model/weights.cpp lays out), training FLOPs per token (the
// count `moetrain bench` uses, model/flops.h) and the inference cost of the
// architecture: KV-cache bytes and forward FLOPs per token.
// Legend: D model dim, H heads, Hkv kv heads, Dh head dim, F ffn/expert
// hidden, E experts, K top-k, Dl latent dim, V vocab, S context length.
#pragma once
#include <cstdint>
#include <vector>

#include "model/config.h"

namespace mt::plan {

struct LayerParams {
  bool moe = false;
  bool local = false;        // sliding-window attention layer
  int64_t kv_heads = 0;
  int64_t attn = 0;          // wq, wk, wv, wo
  int64_t norms = 0;         // attn/ffn norms, q/k norms, latent and output norms
  int64_t dense_ffn = 0;     // SwiGLU w1, w3, w2 (dense layers)
  int64_t router = 0;        // (E, D)
  int64_t latent = 0;        // down (Dl, D) + up (D, Dl)
  int64_t shared = 0;        // shared experts
  int64_t experts = 0;       // all routed experts
  int64_t per_expert = 0;    // one routed expert: 3 F Din
  int64_t dense() const { return attn + norms + dense_ffn + router + latent + shared; }
  int64_t total() const { return dense() + experts; }
};

struct ModelStats {
  std::vector<LayerParams> layers;
  int64_t embed = 0;            // (V, D)
  int64_t head = 0;             // (V, D) when untied, else 0
  int64_t final_norm = 0;
  int64_t total = 0;            // every parameter
  int64_t expert_params = 0;    // routed experts, all layers
  int64_t active_matmul = 0;    // model/weights.h active_matmul_params
  int64_t active_params = 0;    // active_matmul + norms (the LM head counts; the embedding lookup does not)
  int64_t moe_layers = 0;
  double train_flops_per_token = 0;     // model/flops.h flops_per_token (forward + backward)
  // Inference, bf16 cache, context S = seq_len.
  double kv_bytes_per_token = 0;        // every layer's K and V for one token
  double kv_bytes_per_sequence = 0;     // S tokens; sliding-window layers keep only `window` entries
  double prefill_flops_per_token = 0;   // forward only, mean over a prompt of S tokens
  double decode_flops_per_token = 0;    // forward only, one new token at context S
  int64_t seq_len = 0;
};

ModelStats model_stats(const ModelConfig& c, int64_t seq_len);

// Mean keys per query over a sequence of T tokens (closed form of
// kernels/cpu attention_mean_keys): (T + 1) / 2 on global layers, min(i + 1, w) averaged on local ones.
double mean_keys(int64_t T, int64_t window);

// Keys a query at position i (0-based) attends to: min(i + 1, window) on
// sliding-window layers, i + 1 on global ones.
double keys_at(int64_t i, int64_t window);

}  // namespace mt::plan
