// weights.h — where each layer's tensors live in the flat parameter buffer
// (offsets, so the same struct addresses params, grads and moments), how the
// layout is built from a ModelConfig, and initialisation.
// Legend: D model, H heads, Hkv kv heads, Dh head dim, F ffn/expert hidden,
// E experts, Din expert input dim (D, or Dl for latent MoE), V vocab.
#pragma once
#include <cstdint>
#include <vector>

#include "model/config.h"
#include "model/param_layout.h"

namespace mt {

struct SwigluOffsets {
  int64_t w13 = -1;  // w1 (F, Din) immediately followed by w3 (F, Din): one (2F, Din) GEMM
  int64_t w2 = -1;   // (Din, F)
};

// Multi-head latent attention (DeepSeek-V2 section 2.1); Dqk = Dn + Dr.
struct MlaOffsets {
  int64_t wdq = -1;      // W_DQ (Dq, D); Dq > 0 only
  int64_t q_norm = -1;   // (Dq) RMSNorm on the query latent; Dq > 0 only
  int64_t wq = -1;       // W_UQ (H*Dqk, Dq), or W_Q (H*Dqk, D) when Dq = 0
  int64_t wdkv = -1;     // W_DKV (Dc, D) then W_KR (Dr, D), adjacent: one (Dc + Dr, D) GEMM
  int64_t kv_norm = -1;  // (Dc) RMSNorm on the kv latent
  int64_t wukv = -1;     // W_UK (H*Dn, Dc) then W_UV (H*Dv, Dc), adjacent
};

struct AttnOffsets {
  int64_t norm = -1;    // (D)
  int64_t wqkv = -1;    // wq (H*Dh, D), wk (Hkv*Dh, D), wv (Hkv*Dh, D), adjacent; GQA only
  int64_t wo = -1;      // (D, H*Dh); MLA: (D, H*Dv)
  int64_t q_norm = -1;  // (Dh), qk_norm only
  int64_t k_norm = -1;  // (Dh)
  MlaOffsets mla;       // attention = "mla" only
};

// A gated-delta ("D") layer's mixer (model/delta_block.h), in place of AttnOffsets.
struct DeltaOffsets {
  int64_t norm = -1;     // (D)
  int64_t w_in = -1;     // wq, wk (Hd*Dk, D), wv, wz (Hd*Dv, D), wa, wb (Hd, D), adjacent: one (P, D) GEMM
  int64_t A_log = -1;    // (Hd) decay rate log A
  int64_t dt_bias = -1;  // (Hd)
  int64_t o_norm = -1;   // (Dv) per-head RMSNorm of the output
  int64_t wo = -1;       // (D, Hd*Dv)
};

struct MoeOffsets {
  int64_t router = -1;       // (E, D)
  int64_t down = -1;         // (Dl, D), latent only
  int64_t latent_norm = -1;  // (Dl)
  int64_t up = -1;           // (D, Dl)
  std::vector<SwigluOffsets> experts;  // E routed experts, each contiguous
  std::vector<SwigluOffsets> shared;   // shared experts in D space
  int64_t out_norm = -1;     // (D), moe_out_norm only
};

struct LayerOffsets {
  AttnOffsets attn;       // when !delta
  bool delta = false;
  DeltaOffsets delta_w;   // when delta
  int64_t ffn_norm = -1;  // (D)
  bool moe = false;
  SwigluOffsets dense;    // when !moe
  MoeOffsets moe_w;       // when moe
};

// One multi-token-prediction module (DeepSeek-V3 section 2.2, model/mtp.h): unit n_layers + k of the
// layout, its own tensors first (the routed experts of its block must come last in a unit).
struct MtpOffsets {
  int64_t h_norm = -1;     // (D): RMSNorm of the previous depth's hidden state h^{k-1}
  int64_t e_norm = -1;     // (D): RMSNorm of the embedding of token i + k
  int64_t proj = -1;       // (D, 2D): M_k over [h_norm(h); e_norm(e)]
  int64_t head_norm = -1;  // (D): RMSNorm before the shared output head
  LayerOffsets block;      // TRM_k, built like the last layer
};

struct ModelOffsets {
  int64_t embed = -1;       // (V, D)
  std::vector<LayerOffsets> layers;
  std::vector<MtpOffsets> mtp;  // mtp_depth modules, after the layers
  int64_t final_norm = -1;  // (D)
  int64_t head = -1;        // (V, D); == embed when tied
};

ModelOffsets build_layout(const ModelConfig& c, ParamLayout& layout);

// Deterministic init: tensor `name` gets N(0, std^2) from Philox stream
// xxh64(name), so values depend only on (seed, name). Norm weights are 1;
// output projections (wo, w2, up) use std / sqrt(2 * n_layers).
void init_params(float* params, const ParamLayout& layout, const ModelConfig& c, uint64_t seed);

// Parameters a token touches in matrix multiplies (attention, router, its K
// experts, shared experts, latent projections, LM head); excludes the
// embedding lookup, norms and the multi-token-prediction modules (an
// auxiliary objective, not part of the model that is kept; see
// mtp_module_matmul_params). Used for 6*N*tokens FLOP counts.
int64_t active_matmul_params(const ModelConfig& c);

// Matrix parameters of layer `l`'s attention. GQA: wq (H Dh, D), wk and wv
// (Hkv Dh, D), wo (D, H Dh). MLA (DeepSeek-V2 section 2.1, eqs. 9-13 and
// 37-40): W_DQ (Dq, D), W_UQ (H (Dn + Dr), Dq) (or W_Q (H (Dn + Dr), D) when
// Dq = 0), W_DKV (Dc + Dr, D) holding W_KR's one shared RoPE key head,
// W_UK (H Dn, Dc), W_UV (H Dv, Dc), W_O (D, H Dv). Gated-delta ("D") layers:
// W_in (2 Hd Dk + 2 Hd Dv + 2 Hd, D) and W_o (D, Hd Dv).
int64_t attention_matmul_params(const ModelConfig& c, int64_t layer);

// The part of attention_matmul_params that MLA's down-projections W_DQ and
// W_DKV take (0 for GQA): the planner keeps them whole on every TP rank.
int64_t attention_down_params(const ModelConfig& c);

// Matrix parameters one token passes through in one multi-token-prediction
// module (DeepSeek-V3 section 2.2): the projection M_k (D, 2D), a block like
// the last layer (its active matrices) and the shared output head (V, D).
int64_t mtp_module_matmul_params(const ModelConfig& c);

}  // namespace mt
