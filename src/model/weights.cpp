// weights.cpp — layout construction and initialisation.
#include "model/weights.h"

#include <cmath>
#include <string>

#include "core/hash.h"
#include "core/rng.h"

namespace mt {
namespace {

SwigluOffsets add_swiglu(ParamLayout& L, const std::string& p, int64_t F, int64_t Din, int64_t layer,
                         int64_t expert) {
  SwigluOffsets s;
  s.w13 = L.add(p + ".w1", {F, Din}, ParamKind::kMatrix, layer, expert);
  L.add(p + ".w3", {F, Din}, ParamKind::kMatrix, layer, expert);
  s.w2 = L.add(p + ".w2", {Din, F}, ParamKind::kMatrix, layer, expert);
  return s;
}

// Same tensors, in the same order of sizes, as attention_matmul_params and
// plan/model_stats.cpp count them.
MlaOffsets add_mla(ParamLayout& L, const ModelConfig& c, const std::string& p, int64_t l) {
  const int64_t D = c.d_model, H = c.n_heads, Dq = c.q_lora_rank, Dc = c.kv_lora_rank;
  const int64_t Dn = c.qk_nope_head_dim, Dr = c.qk_rope_head_dim, Dqk = c.qk_head_dim(), Dv = c.v_head_dim;
  MlaOffsets m;
  if (Dq > 0) {
    m.wdq = L.add(p + ".attn.wdq", {Dq, D}, ParamKind::kMatrix, l);
    m.q_norm = L.add(p + ".attn.q_latent_norm", {Dq}, ParamKind::kNorm, l);
    m.wq = L.add(p + ".attn.wuq", {H * Dqk, Dq}, ParamKind::kMatrix, l);
  } else {
    m.wq = L.add(p + ".attn.wq", {H * Dqk, D}, ParamKind::kMatrix, l);
  }
  m.wdkv = L.add(p + ".attn.wdkv", {Dc, D}, ParamKind::kMatrix, l);
  L.add(p + ".attn.wkr", {Dr, D}, ParamKind::kMatrix, l);
  m.kv_norm = L.add(p + ".attn.kv_latent_norm", {Dc}, ParamKind::kNorm, l);
  m.wukv = L.add(p + ".attn.wuk", {H * Dn, Dc}, ParamKind::kMatrix, l);
  L.add(p + ".attn.wuv", {H * Dv, Dc}, ParamKind::kMatrix, l);
  return m;
}

// The tensors of one block (attention or gated delta + dense FFN or MoE) of unit `l`, named under prefix `p`.
LayerOffsets add_block(ParamLayout& L, const ModelConfig& c, const std::string& p, int64_t l) {
  const int64_t D = c.d_model, Dh = c.head_dim(), H = c.n_heads;
  const int64_t Hkv = c.kv_heads(l);
  LayerOffsets lo;
  lo.delta = c.is_delta(l);
  if (lo.delta) {
    const int64_t Hd = c.delta_h(), Dk = c.delta_dk(), Dv = c.delta_dv();
    DeltaOffsets& w = lo.delta_w;
    w.norm = L.add(p + ".attn_norm", {D}, ParamKind::kNorm, l);
    w.w_in = L.add(p + ".delta.wq", {Hd * Dk, D}, ParamKind::kMatrix, l);
    L.add(p + ".delta.wk", {Hd * Dk, D}, ParamKind::kMatrix, l);
    L.add(p + ".delta.wv", {Hd * Dv, D}, ParamKind::kMatrix, l);
    L.add(p + ".delta.wz", {Hd * Dv, D}, ParamKind::kMatrix, l);
    L.add(p + ".delta.wa", {Hd, D}, ParamKind::kMatrix, l);
    L.add(p + ".delta.wb", {Hd, D}, ParamKind::kMatrix, l);
    w.A_log = L.add(p + ".delta.A_log", {Hd}, ParamKind::kNorm, l);
    w.dt_bias = L.add(p + ".delta.dt_bias", {Hd}, ParamKind::kNorm, l);
    w.o_norm = L.add(p + ".delta.o_norm", {Dv}, ParamKind::kNorm, l);
    w.wo = L.add(p + ".delta.wo", {D, Hd * Dv}, ParamKind::kMatrix, l);
  } else {
    lo.attn.norm = L.add(p + ".attn_norm", {D}, ParamKind::kNorm, l);
    if (c.mla()) {
      lo.attn.mla = add_mla(L, c, p, l);
      lo.attn.wo = L.add(p + ".attn.wo", {D, H * c.v_head_dim}, ParamKind::kMatrix, l);
    } else {
      lo.attn.wqkv = L.add(p + ".attn.wq", {H * Dh, D}, ParamKind::kMatrix, l);
      L.add(p + ".attn.wk", {Hkv * Dh, D}, ParamKind::kMatrix, l);
      L.add(p + ".attn.wv", {Hkv * Dh, D}, ParamKind::kMatrix, l);
      lo.attn.wo = L.add(p + ".attn.wo", {D, H * Dh}, ParamKind::kMatrix, l);
    }
    if (c.qk_norm && !c.mla()) {
      lo.attn.q_norm = L.add(p + ".attn.q_norm", {Dh}, ParamKind::kNorm, l);
      lo.attn.k_norm = L.add(p + ".attn.k_norm", {Dh}, ParamKind::kNorm, l);
    }
  }
  lo.ffn_norm = L.add(p + ".ffn_norm", {D}, ParamKind::kNorm, l);
  lo.moe = c.is_moe(l);
  if (!lo.moe) {
    lo.dense = add_swiglu(L, p + ".mlp", c.d_ff, D, l, -1);
  } else {
    MoeOffsets& w = lo.moe_w;
    const int64_t Din = c.expert_in_dim();
    w.router = L.add(p + ".moe.router", {c.n_experts, D}, ParamKind::kMatrix, l);
    if (c.d_latent > 0) {
      w.down = L.add(p + ".moe.down", {c.d_latent, D}, ParamKind::kMatrix, l);
      w.latent_norm = L.add(p + ".moe.latent_norm", {c.d_latent}, ParamKind::kNorm, l);
      w.up = L.add(p + ".moe.up", {D, c.d_latent}, ParamKind::kMatrix, l);
    }
    for (int64_t s = 0; s < c.n_shared_experts; ++s)
      w.shared.push_back(add_swiglu(L, p + ".moe.shared." + std::to_string(s), c.d_expert, D, l, -1));
    if (c.moe_out_norm) w.out_norm = L.add(p + ".moe.out_norm", {D}, ParamKind::kNorm, l);
    for (int64_t e = 0; e < c.n_experts; ++e)
      w.experts.push_back(add_swiglu(L, p + ".moe.experts." + std::to_string(e), c.d_expert, Din, l, e));
  }
  return lo;
}

}  // namespace

ModelOffsets build_layout(const ModelConfig& c, ParamLayout& L) {
  ModelOffsets m;
  const int64_t D = c.d_model;
  m.embed = L.add("embed", {c.vocab_size, D}, ParamKind::kEmbedding);
  for (int64_t l = 0; l < c.n_layers; ++l) m.layers.push_back(add_block(L, c, "layers." + std::to_string(l), l));
  for (int64_t k = 0; k < c.mtp_depth; ++k) {
    const std::string p = "mtp." + std::to_string(k);
    const int64_t u = c.n_layers + k;
    MtpOffsets o;
    o.h_norm = L.add(p + ".h_norm", {D}, ParamKind::kNorm, u);
    o.e_norm = L.add(p + ".e_norm", {D}, ParamKind::kNorm, u);
    o.proj = L.add(p + ".proj", {D, 2 * D}, ParamKind::kMatrix, u);
    o.head_norm = L.add(p + ".head_norm", {D}, ParamKind::kNorm, u);
    o.block = add_block(L, c, p, u);
    m.mtp.push_back(o);
  }
  m.final_norm = L.add("final_norm", {D}, ParamKind::kNorm);
  m.head = c.tied_embeddings ? m.embed : L.add("head", {c.vocab_size, D}, ParamKind::kMatrix);
  return m;
}

void init_params(float* params, const ParamLayout& layout, const ModelConfig& c, uint64_t seed) {
  const float out_scale = float(1.0 / std::sqrt(2.0 * double(c.n_layers)));
  for (const auto& e : layout.entries()) {
    float* p = params + e.offset;
    if (e.name.ends_with(".delta.A_log")) {  // A = 1 (Mamba2 / Gated DeltaNet draw A in [1, 16])
      for (int64_t i = 0; i < e.numel; ++i) p[i] = 0.0f;
      continue;
    }
    if (e.name.ends_with(".delta.dt_bias")) {
      // softplus(dt_bias) = dt spread geometrically over [1e-3, 1e-1] across heads (Mamba2's range,
      // deterministic instead of drawn), so decays start between exp(-0.1) and exp(-0.001).
      for (int64_t i = 0; i < e.numel; ++i) {
        const double dt = 1e-3 * std::pow(100.0, e.numel > 1 ? double(i) / double(e.numel - 1) : 0.5);
        p[i] = float(std::log(std::expm1(dt)));
      }
      continue;
    }
    if (e.kind == ParamKind::kNorm) {
      for (int64_t i = 0; i < e.numel; ++i) p[i] = 1.0f;
      continue;
    }
    const bool output_proj = e.name.ends_with(".wo") || e.name.ends_with(".w2") || e.name.ends_with(".up");
    const float std = float(c.init_std) * (output_proj ? out_scale : 1.0f);
    fill_normal(p, e.numel, std, seed, xxh64(e.name.data(), e.name.size()));
  }
}

int64_t attention_down_params(const ModelConfig& c) {
  if (!c.mla()) return 0;
  return c.q_lora_rank * c.d_model + (c.kv_lora_rank + c.qk_rope_head_dim) * c.d_model;
}

int64_t attention_matmul_params(const ModelConfig& c, int64_t layer) {
  const int64_t D = c.d_model, H = c.n_heads;
  if (c.is_delta(layer)) {  // W_in (P, D) and W_o (D, Hd Dv)
    const int64_t Hd = c.delta_h(), P = 2 * Hd * c.delta_dk() + 2 * Hd * c.delta_dv() + 2 * Hd;
    return P * D + D * Hd * c.delta_dv();
  }
  if (!c.mla()) {
    const int64_t Dh = c.head_dim();
    return (H + 2 * c.kv_heads(layer)) * Dh * D + D * H * Dh;
  }
  const int64_t Dq = c.q_lora_rank, Dc = c.kv_lora_rank, Dqk = c.qk_head_dim();
  const int64_t wq = Dq > 0 ? H * Dqk * Dq : H * Dqk * D;  // W_UQ, or W_Q without a query latent
  return attention_down_params(c) + wq + H * c.qk_nope_head_dim * Dc + H * c.v_head_dim * Dc + D * H * c.v_head_dim;
}

namespace {
// Matrices one token passes through in layer l, the LM head excluded.
int64_t layer_active_matmul_params(const ModelConfig& c, int64_t l) {
  const int64_t D = c.d_model;
  int64_t total = attention_matmul_params(c, l);
  if (!c.is_moe(l)) {
    total += 3 * c.d_ff * D;
  } else {
    const int64_t Din = c.expert_in_dim();
    total += c.n_experts * D;
    if (c.d_latent > 0) total += 2 * c.d_latent * D;
    total += c.top_k * 3 * c.d_expert * Din + c.n_shared_experts * 3 * c.d_expert * D;
  }
  return total;
}
}  // namespace

int64_t active_matmul_params(const ModelConfig& c) {
  int64_t total = c.vocab_size * c.d_model;  // LM head
  for (int64_t l = 0; l < c.n_layers; ++l) total += layer_active_matmul_params(c, l);
  return total;
}

int64_t mtp_module_matmul_params(const ModelConfig& c) {
  const int64_t D = c.d_model;
  return 2 * D * D + layer_active_matmul_params(c, c.n_layers - 1) + c.vocab_size * D;
}

}  // namespace mt
