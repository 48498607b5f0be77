// context_chunks.h — which positions of a sequence each rank of a
// context-parallel group holds (dist.cp = cp): the sequence is cut into 2 cp
// chunks of T / (2 cp) tokens and rank r holds chunks r and 2cp - 1 - r, so
// every rank has the same causal attention work (Megatron-Core's context
// parallelism; Llama 3 report, 2024, section 3.3.2).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "model/config.h"

namespace mt {

inline int64_t context_chunk_len(int64_t T, int64_t cp) { return T / (2 * cp); }

// The rank of a cp-rank group that holds chunk j (0 <= j < 2 cp).
inline int64_t context_chunk_owner(int64_t j, int64_t cp) { return j < cp ? j : 2 * cp - 1 - j; }

// Rank r's two chunks, in position order (r < 2cp - 1 - r).
inline std::pair<int64_t, int64_t> context_chunks(int64_t r, int64_t cp) { return {r, 2 * cp - 1 - r}; }

// The positions rank r holds, increasing: its local rows in order. T must be a multiple of 2 cp.
inline std::vector<int32_t> context_positions(int64_t T, int64_t cp, int64_t r) {
  const int64_t c = context_chunk_len(T, cp);
  std::vector<int32_t> pos;
  pos.reserve(size_t(2 * c));
  for (int64_t j : {context_chunks(r, cp).first, context_chunks(r, cp).second})
    for (int64_t t = 0; t < c; ++t) pos.push_back(int32_t(j * c + t));
  return pos;
}

// Bytes rank r receives in one exchange of a (B, heads, width) tensor in a
// layer of `window` (dist/context_parallel.h): a gather of elements of
// elem_bytes (all-gather on a global layer, the window - 1 halo rows from the
// owner of the chunk before each of its chunks otherwise), and a reduce of
// its fp32 gradients (reduce-scatter; halos back from the owner of the chunk
// after each of its chunks). Rows exchanged with itself are not counted.
inline int64_t context_gather_bytes(int64_t T, int64_t cp, int64_t r, int64_t B, int64_t heads, int64_t width,
                                    int64_t elem_bytes, int64_t window) {
  const int64_t c = context_chunk_len(T, cp), row = width * elem_bytes;
  if (window <= 0 || window >= T) return (cp - 1) * B * heads * 2 * c * row;
  int64_t halos = 0;
  for (int64_t j : {context_chunks(r, cp).first, context_chunks(r, cp).second})
    if (j > 0 && context_chunk_owner(j - 1, cp) != r) ++halos;
  return halos * B * heads * (window - 1) * row;
}
inline int64_t context_reduce_bytes(int64_t T, int64_t cp, int64_t r, int64_t B, int64_t heads, int64_t width,
                                    int64_t window) {
  if (window <= 0 || window >= T) return context_gather_bytes(T, cp, r, B, heads, width, 4, window);
  int64_t halos = 0;
  for (int64_t j : {context_chunks(r, cp).first, context_chunks(r, cp).second})
    if (j + 1 < 2 * cp && context_chunk_owner(j + 1, cp) != r) ++halos;
  return halos * B * heads * (window - 1) * width * 4;
}

// Context parallelism (dist.cp): where a rank sits and what it exchanges.
struct ContextShape {
  int64_t cp = 1, rank = 0;  // group size, this rank's place in it
  int64_t kv_bytes = 4;      // bytes of a gathered K/V element (MLA: latent element); bf16 operands: 2
  bool recompute = false;    // train.activation_checkpointing: each layer's forward (its gathers) runs twice
};

// Bytes one rank receives per micro-batch of local_batch sequences of seq_len:
// per attention layer (and MTP module) a gather of K and V (MLA: its kv
// latent and RoPE key) forward, again backward with a reduce of their
// gradients, one more gather per recomputed forward.
int64_t context_micro_batch_bytes(const ModelConfig& c, int64_t local_batch, int64_t seq_len, const ContextShape& cx);

}  // namespace mt
