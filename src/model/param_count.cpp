// param_count.cpp — see param_count.h.
#include "model/param_count.h"

#include "model/weights.h"

namespace mt {

LayerParamCount layer_params(const ModelConfig& c, int64_t l) {
  const int64_t D = c.d_model, Dh = c.head_dim();
  LayerParamCount p;
  p.moe = c.is_moe(l);
  p.local = c.is_local(l);
  p.kv_heads = c.mla() ? c.n_heads : c.kv_heads(l);
  p.attn_down = attention_down_params(c);
  p.attn = attention_matmul_params(c, l) - p.attn_down;
  p.norms = 2 * D;
  p.delta = c.is_delta(l);
  if (p.delta) {
    p.kv_heads = 0;
    p.norms += c.delta_dv() + 2 * c.delta_h();  // output RMSNorm, A_log, dt_bias
  } else if (c.mla())
    p.norms += c.q_lora_rank + c.kv_lora_rank;  // RMSNorm on each latent (DeepSeek-V2 eq. 37 / 9)
  else if (c.qk_norm)
    p.norms += 2 * Dh;
  if (!p.moe) {
    p.dense_ffn = 3 * c.d_ff * D;
  } else {
    const int64_t Din = c.expert_in_dim(), F = c.d_expert;
    p.router = c.n_experts * D;
    if (c.d_latent > 0) {
      p.latent = 2 * c.d_latent * D;
      p.norms += c.d_latent;
    }
    if (c.moe_out_norm) p.norms += D;
    p.shared = c.n_shared_experts * 3 * F * D;
    p.per_expert = 3 * F * Din;
    p.experts = c.n_experts * p.per_expert;
  }
  return p;
}

int64_t mtp_extra_params(const ModelConfig& c) { return 2 * c.d_model * c.d_model + 3 * c.d_model; }

double total_params(const ModelConfig& c) {
  const double D = double(c.d_model), V = double(c.vocab_size);
  double total = V * D * (c.tied_embeddings ? 1.0 : 2.0) + D;  // embedding, head, final norm
  for (int64_t l = 0; l < c.n_layers; ++l) total += double(layer_params(c, l).total());
  if (c.mtp_depth > 0)
    total += double(c.mtp_depth) * (double(layer_params(c, c.n_layers - 1).total()) + double(mtp_extra_params(c)));
  return total;
}

}  // namespace mt
