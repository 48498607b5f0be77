// context_chunks.h — which positions of a sequence each rank of a
// context-parallel group holds (dist.cp = cp): the sequence is cut into 2 cp
// chunks of T / (2 cp) tokens and rank r holds chunks r and 2cp - 1 - r, so
// every rank has the same causal attention work (Megatron-Core's context
// parallelism; Llama 3 report, 2024, section 3.3.2).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

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

}  // namespace mt
