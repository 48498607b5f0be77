// context_chunks.cpp — see context_chunks.h.
#include "model/context_chunks.h"

namespace mt {

int64_t context_micro_batch_bytes(const ModelConfig& c, int64_t local_batch, int64_t seq_len, const ContextShape& cx) {
  if (cx.cp <= 1) return 0;
  int64_t bytes = 0;
  for (int64_t u = 0; u < c.n_units(); ++u) {  // an MTP module's block answers as the last layer (arch_layer)
    if (c.is_delta(u)) continue;
    const int64_t w = c.is_local(u) ? c.window : 0, hkv = c.kv_heads(u), Dh = c.head_dim();
    const int64_t gather = 2 * context_gather_bytes(seq_len, cx.cp, cx.rank, local_batch, hkv, Dh, cx.kv_bytes, w);
    const int64_t reduce = 2 * context_reduce_bytes(seq_len, cx.cp, cx.rank, local_batch, hkv, Dh, w);
    bytes += (cx.recompute ? 3 : 2) * gather + reduce;
  }
  return bytes;
}

}  // namespace mt
