// attention.h — causal grouped-query attention, optionally with a sliding
// window. Query i attends to keys j with max(0, i - window + 1) <= j <= i
// (window <= 0 means global causal). Cost is O(T * min(T, window)) per head.
// Shapes: q (B, H, T, Dh), k (B, Hkv, T, Dh); v (B, Hkv, T, Dv), o (B, H, T, Dv)
// with Dv = Dh unless set (multi-head latent attention: Dh = Dn + Dr, Dv
// its own width); lse (B, H, T) saved for backward; query head h uses kv head
// h / (H / Hkv). Scale 1/sqrt(Dh).
// Document masking (train.document_mask): with doc_start set, a query also
// sees only keys of its own document, in a row packed with several
// (attention_softmax.h); the work before a document's start is skipped.
// Context parallelism (dist.cp): the queries may be Tq rows at positions
// q_pos of the T-key sequence (this rank's chunks), against all T keys.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/cpu/attention_softmax.h"

namespace mt {

struct AttentionDims {
  int64_t B, H, Hkv, T, Dh;
  int64_t window;  // <= 0: global causal
  int64_t Dv = 0;  // value / output head width; 0: Dh
  // o and dout token-major, (B, T, H, Dv): the layout the output projection
  // reads, so no merge-heads copy runs in either direction.
  bool token_major_out = false;
  int64_t v_dim() const { return Dv > 0 ? Dv : Dh; }
  // Query rows per (b, h) and their positions among the T keys: q, o, dout,
  // dq, lse and doc_start hold Tq rows, k, v, dk, dv all T. Tq = 0: T rows at
  // positions 0..T-1. Positions increase along the rows (runs of consecutive ones).
  int64_t Tq = 0;
  const int32_t* q_pos = nullptr;
  int64_t q_rows() const { return Tq > 0 ? Tq : T; }
  int64_t q_position(int64_t i) const { return q_pos ? q_pos[i] : i; }
  // Offset of head (b, h)'s first output row, and the stride between rows.
  int64_t out_offset(int64_t b, int64_t h) const {
    return token_major_out ? (b * q_rows() * H + h) * v_dim() : (b * H + h) * q_rows() * v_dim();
  }
  int64_t out_stride() const { return token_major_out ? H * v_dim() : v_dim(); }
  // (B, Tq): the position in its row where each query's document begins
  // (non-decreasing along a row, at most the query's position); null: a row is one document.
  const int32_t* doc_start = nullptr;
  const int32_t* doc_row(int64_t b) const { return doc_start ? doc_start + b * q_rows() : nullptr; }
  // First key (a position) query row i of row b sees.
  int64_t key_begin(int64_t b, int64_t i) const {
    const int64_t p = q_position(i);
    return doc_start ? attention_key_begin(p, window, doc_start[b * q_rows() + i]) : attention_key_begin(p, window);
  }
};

// The query blocks of at most `rows` rows the kernels work in, (first row,
// rows) in order: consecutive positions each (a block never spans two runs of q_pos).
std::vector<std::pair<int64_t, int64_t>> attention_query_blocks(const AttentionDims& d, int64_t rows);

void attention_forward(float* o, float* lse, const float* q, const float* k, const float* v,
                       const AttentionDims& d);

// dq written; dk, dv written (each kv head is owned by one task, which sums
// over its query heads in a fixed order: thread-count invariant).
void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q,
                        const float* k, const float* v, const float* o, const float* lse,
                        const AttentionDims& d);

// Mean number of keys a query attends to (for FLOP counting).
double attention_mean_keys(int64_t T, int64_t window);
// The same for rows packed with documents of doc_tokens each (the last one
// cut at T; doc_tokens <= 0 or >= T: one document per row).
double attention_mean_keys(int64_t T, int64_t window, int64_t doc_tokens);
// Keys attended in total over rows [0, B) with document starts doc_start
// (B, T) (null: one document per row): the work a pass actually does.
double attention_keys(const int32_t* doc_start, int64_t B, int64_t T, int64_t window);
// The same for the queries of d (its Tq rows at q_pos, its documents and window).
double attention_keys(const AttentionDims& d);

}  // namespace mt
