// attention.h — causal grouped-query attention, optionally with a sliding
// window. Query i attends to keys j with max(0, i - window + 1) <= j <= i
// (window <= 0 means global causal). Cost is O(T * min(T, window)) per head.
// Shapes: q (B, H, T, Dh), k (B, Hkv, T, Dh); v (B, Hkv, T, Dv), o (B, H, T, Dv)
// with Dv = Dh unless set (multi-head latent attention: Dh = Dn + Dr, Dv
// its own width); lse (B, H, T) saved for backward; query head h uses kv head
// h / (H / Hkv). Scale 1/sqrt(Dh).
#pragma once
#include <cstdint>

namespace mt {

struct AttentionDims {
  int64_t B, H, Hkv, T, Dh;
  int64_t window;  // <= 0: global causal
  int64_t Dv = 0;  // value / output head width; 0: Dh
  // o and dout token-major, (B, T, H, Dv): the layout the output projection
  // reads, so no merge-heads copy runs in either direction.
  bool token_major_out = false;
  int64_t v_dim() const { return Dv > 0 ? Dv : Dh; }
  // Offset of head (b, h)'s first output row, and the stride between rows.
  int64_t out_offset(int64_t b, int64_t h) const {
    return token_major_out ? (b * T * H + h) * v_dim() : (b * H + h) * T * v_dim();
  }
  int64_t out_stride() const { return token_major_out ? H * v_dim() : v_dim(); }
};

void attention_forward(float* o, float* lse, const float* q, const float* k, const float* v,
                       const AttentionDims& d);

// dq written; dk, dv written (each kv head is owned by one task, which sums
// over its query heads in a fixed order: thread-count invariant).
void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q,
                        const float* k, const float* v, const float* o, const float* lse,
                        const AttentionDims& d);

// Mean number of keys a query attends to (for FLOP counting).
double attention_mean_keys(int64_t T, int64_t window);

}  // namespace mt
