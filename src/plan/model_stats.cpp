// model_stats.cpp — see model_stats.h. Counts mirror model/weights.cpp's
// build_layout tensor by tensor (a unit test checks the totals agree).
#include "plan/model_stats.h"

#include <algorithm>

#include "model/weights.h"
#include "model/flops.h"

namespace mt::plan {

double mean_keys(int64_t T, int64_t window) {
  if (T <= 0) return 0.0;
  const double t = double(T);
  if (window <= 0 || window >= T) return (t + 1) / 2;
  const double w = double(window);
  return (w * (w + 1) / 2 + (t - w) * w) / t;
}

double keys_at(int64_t i, int64_t window) {
  return window > 0 ? double(std::min(i + 1, window)) : double(i + 1);
}

ModelStats model_stats(const ModelConfig& c, int64_t seq_len) {
  ModelStats s;
  s.seq_len = seq_len;
  const int64_t D = c.d_model, H = c.n_heads, Dh = c.head_dim(), V = c.vocab_size;
  s.embed = V * D;
  s.head = c.tied_embeddings ? 0 : V * D;
  s.final_norm = D;
  s.total = s.embed + s.head + s.final_norm;
  int64_t norms_total = D;
  double kv_seq = 0;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    LayerParams p;
    p.moe = c.is_moe(l);
    p.local = c.is_local(l);
    p.kv_heads = c.kv_heads(l);
    p.attn = (H + 2 * p.kv_heads) * Dh * D + D * H * Dh;
    p.norms = 2 * D + (c.qk_norm ? 2 * Dh : 0);
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
      s.expert_params += p.experts;
      ++s.moe_layers;
    }
    s.total += p.total();
    norms_total += p.norms;
    // bf16 K and V: 2 tensors x Hkv x Dh x 2 bytes per cached token.
    const double per_tok = 2.0 * double(p.kv_heads * Dh) * 2.0;
    s.kv_bytes_per_token += per_tok;
    const int64_t cached = p.local ? std::min(seq_len, c.window) : seq_len;
    kv_seq += per_tok * double(cached);
    s.layers.push_back(p);
  }
  s.kv_bytes_per_sequence = kv_seq;
  s.active_matmul = active_matmul_params(c);
  s.active_params = s.active_matmul + norms_total;
  s.train_flops_per_token = flops_per_token(c, seq_len);
  // Forward: 2 FLOPs per active matmul parameter, plus QK^T and PV (2 x 2 x H Dh per key).
  double mean_keys_sum = 0, decode_keys = 0;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const int64_t w = c.is_local(l) ? c.window : 0;
    mean_keys_sum += mean_keys(seq_len, w);
    decode_keys += keys_at(seq_len - 1, w);
  }
  s.prefill_flops_per_token = 2.0 * double(s.active_matmul) + 4.0 * double(H * Dh) * mean_keys_sum;
  s.decode_flops_per_token = 2.0 * double(s.active_matmul) + 4.0 * double(H * Dh) * decode_keys;
  return s;
}

}  // namespace mt::plan
