// context_chunks.cpp — see context_chunks.h.
#include "model/context_chunks.h"

namespace mt {

int64_t context_micro_batch_bytes(const ModelConfig& c, int64_t local_batch, int64_t seq_len, const ContextShape& cx) {
  if (cx.cp <= 1) return 0;
  int64_t bytes = 0;
  for (int64_t u = 0; u < c.n_units(); ++u) {  // an MTP module's block answers as the last layer (arch_layer)
    if (c.is_delta(u)) continue;
    const int64_t w = c.is_local(u) ? c.window : 0, T = seq_len, B = local_batch;
    int64_t gather = 0, reduce = 0;
    if (c.mla()) {  // the kv latent (Dc) and the RoPE key (Dr, fp32) of each token, one "head"
      const int64_t Dc = c.kv_lora_rank, Dr = c.qk_rope_head_dim;
      gather = context_gather_bytes(T, cx.cp, cx.rank, B, 1, Dc, cx.kv_bytes, w) +
               context_gather_bytes(T, cx.cp, cx.rank, B, 1, Dr, 4, w);
      reduce = context_reduce_bytes(T, cx.cp, cx.rank, B, 1, Dc, w) + context_reduce_bytes(T, cx.cp, cx.rank, B, 1, Dr, w);
    } else {  // K and V
      const int64_t hkv = c.kv_heads(u), Dh = c.head_dim();
      gather = 2 * context_gather_bytes(T, cx.cp, cx.rank, B, hkv, Dh, cx.kv_bytes, w);
      reduce = 2 * context_reduce_bytes(T, cx.cp, cx.rank, B, hkv, Dh, w);
    }
    bytes += (cx.recompute ? 3 : 2) * gather + reduce;
  }
  return bytes;
}

}  // namespace mt
