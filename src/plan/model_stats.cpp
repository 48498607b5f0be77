// model_stats.cpp — see model_stats.h. Counts mirror model/weights.cpp's
// build_layout tensor by tensor (a unit test checks the totals agree).
#include "plan/model_stats.h"

#include <algorithm>

#include "kernels/cpu/gated_delta.h"
#include "model/flops.h"
#include "model/weights.h"

namespace mt::plan {

double mean_keys(int64_t T, int64_t window) {
  if (T <= 0) return 0.0;
  const double t = double(T);
  if (window <= 0 || window >= T) return (t + 1) / 2;
  const double w = double(window);
  return (w * (w + 1) / 2 + (t - w) * w) / t;
}

double mean_keys(int64_t T, int64_t window, int64_t doc_tokens) {
  if (doc_tokens <= 0 || doc_tokens >= T) return mean_keys(T, window);
  // Keys of every query of a document of n tokens: n times the mean of a sequence of n.
  auto total = [&](int64_t n) { return n > 0 ? double(n) * mean_keys(n, window) : 0.0; };
  return (double(T / doc_tokens) * total(doc_tokens) + total(T % doc_tokens)) / double(T);
}

double keys_at(int64_t i, int64_t window) {
  return window > 0 ? double(std::min(i + 1, window)) : double(i + 1);
}

ModelStats model_stats(const ModelConfig& c, int64_t seq_len, int64_t doc_tokens) {
  ModelStats s;
  s.seq_len = seq_len;
  const int64_t D = c.d_model, H = c.n_heads, V = c.vocab_size;
  s.embed = V * D;
  s.head = c.tied_embeddings ? 0 : V * D;
  s.final_norm = D;
  s.total = s.embed + s.head + s.final_norm;
  int64_t norms_total = D;
  double kv_seq = 0;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const LayerParams p = layer_params(c, l);
    if (p.moe) {
      s.expert_params += p.experts;
      ++s.moe_layers;
    }
    s.total += p.total();
    norms_total += p.norms;
    const double per_tok = double(kv_cache_elems(c, l)) * 2.0;  // bf16
    s.kv_bytes_per_token += per_tok;
    const int64_t cached = p.local ? std::min(seq_len, c.window) : seq_len;
    kv_seq += per_tok * double(cached);
    s.state_bytes_per_sequence += 4.0 * double(state_elems(c, l));
    s.layers.push_back(p);
  }
  if (c.mtp_depth > 0) {
    s.mtp_block = layer_params(c, c.n_layers - 1);
    s.mtp_extra = mtp_extra_params(c);
    s.mtp_params = c.mtp_depth * (s.mtp_block.total() + s.mtp_extra);
    s.total += s.mtp_params;
    s.expert_params += c.mtp_depth * s.mtp_block.experts;
  }
  s.kv_bytes_per_sequence = kv_seq;
  s.active_matmul = active_matmul_params(c);
  s.active_params = s.active_matmul + norms_total;
  s.train_flops_per_token = flops_per_token(c, seq_len, doc_tokens);
  // Forward: 2 FLOPs per active matmul parameter, plus QK^T and PV: 2 H (Dqk + Dv) per key. The MTP
  // modules are not used (DeepSeek-V3 discards them, or runs them for speculative decoding).
  // Gated-delta layers: the chunked form over a prompt, and one recurrent step per decoded token (S k,
  // the rank-1 update and S q: 6 Dk Dv per head).
  double mean_keys_sum = 0, decode_keys = 0, delta_prefill = 0, delta_decode = 0;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    if (c.is_delta(l)) {
      const int64_t Hd = c.delta_h(), Dk = c.delta_dk(), Dv = c.delta_dv();
      const int64_t C = std::max<int64_t>(1, std::min(c.delta_chunk, seq_len));
      delta_prefill += double(Hd) * gated_delta_flops_per_token(Dk, Dv, C);
      delta_decode += 6.0 * double(Hd * Dk * Dv);
      continue;
    }
    const int64_t w = c.is_local(l) ? c.window : 0;
    mean_keys_sum += mean_keys(seq_len, w);
    decode_keys += keys_at(seq_len - 1, w);
  }
  const double per_key = 2.0 * double(H * (c.qk_head_dim() + c.v_dim()));
  // Full square: each query meets its whole span instead of the causal (and document) mean, forward and
  // backward (3 x the forward's per-key FLOPs), in the main layers and in each MTP module's block.
  double extra_keys = 0;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    if (c.is_delta(l)) continue;
    const int64_t w = c.is_local(l) ? c.window : 0;
    const double span = w > 0 ? double(std::min(w, seq_len)) : double(seq_len);
    const double gap = span - mean_keys(seq_len, w, doc_tokens);
    extra_keys += gap;
    if (l == c.n_layers - 1) extra_keys += double(c.mtp_depth) * gap;
  }
  s.train_flops_full_square = s.train_flops_per_token + 3.0 * per_key * extra_keys;
  s.prefill_flops_per_token = 2.0 * double(s.active_matmul) + per_key * mean_keys_sum + delta_prefill;
  // Decode with MLA in its absorbed form (DeepSeek-V2 2.1.2: W_UK folded into the query, W_UV into the
  // output): the same matrices once per token, and per cached key 2 H (Dc + Dr) for the scores over the
  // latent and the RoPE key plus 2 H Dc for the values over the latent.
  const double decode_per_key =
      c.mla() ? 2.0 * double(H * (2 * c.kv_lora_rank + c.qk_rope_head_dim)) : per_key;
  s.decode_flops_per_token = 2.0 * double(s.active_matmul) + decode_per_key * decode_keys + delta_decode;
  return s;
}

}  // namespace mt::plan
