// param_count.h — the parameters of a ModelConfig by layer and kind, and in
// total, counted without building the layout: the one counter the planner
// (plan/model_stats.h) and the trainer's memory check both call. Counts
// mirror model/weights.cpp's build_layout tensor by tensor (a unit test
// checks total_params against ParamLayout::total()).
// Legend: D model dim, Dh head dim, F expert hidden, Din expert input
// (D, or the latent Dl), E experts, V vocab (model/config.h).
#pragma once
#include <cstdint>

#include "model/config.h"

namespace mt {

struct LayerParamCount {
  bool moe = false;
  bool local = false;  // sliding-window attention layer
  bool delta = false;  // gated-delta layer: attn holds its W_in and W_o, no KV cache
  int64_t kv_heads = 0;
  int64_t attn = 0;        // wq, wk, wv, wo (MLA: W_UQ or W_Q, W_UK, W_UV, W_O), split by TP
  int64_t attn_down = 0;   // MLA: W_DQ and W_DKV, whole on every TP rank (model/weights.h)
  int64_t norms = 0;       // attn/ffn norms, q/k norms, MLA latent norms, MoE latent and output norms
  int64_t dense_ffn = 0;   // SwiGLU w1, w3, w2 (dense layers)
  int64_t router = 0;      // (E, D)
  int64_t latent = 0;      // down (Dl, D) + up (D, Dl)
  int64_t shared = 0;      // shared experts
  int64_t experts = 0;     // all routed experts
  int64_t per_expert = 0;  // one routed expert: 3 F Din
  int64_t dense() const { return attn + attn_down + norms + dense_ffn + router + latent + shared; }
  int64_t total() const { return dense() + experts; }
};

// Parameters of layer `l` by kind (one layer fits int64 for any valid config).
LayerParamCount layer_params(const ModelConfig& c, int64_t l);

// Parameters of a multi-token-prediction module besides its block (a copy
// of the last layer's): RMSNorms on the hidden state and the embedding, the
// projection (D, 2D) and the final norm: 2 D^2 + 3 D.
int64_t mtp_extra_params(const ModelConfig& c);

// Every parameter: embedding, untied head, final norm, layers, MTP modules.
// In double, so the memory check can refuse a config too large for int64
// before its layout is built.
double total_params(const ModelConfig& c);

}  // namespace mt
