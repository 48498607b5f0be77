// heads.h — layout changes between token-major and head-major activations.
// qkv (N, (H + 2 Hkv) * Dh) token-major with N = B*T  <->  q (B, H, T, Dh),
// k, v (B, Hkv, T, Dh). o (B, H, T, Dh) <-> (N, H * Dh).
#pragma once
#include <cstdint>

namespace mt {

void split_qkv(float* q, float* k, float* v, const float* qkv, int64_t B, int64_t T, int64_t H,
               int64_t Hkv, int64_t Dh);
void split_qkv_backward(float* dqkv, const float* dq, const float* dk, const float* dv, int64_t B,
                        int64_t T, int64_t H, int64_t Hkv, int64_t Dh);
// ld: the token-major side's row length (0 = H * Dh): its first H * Dh
// columns, so a product's output with more columns is read or written in place.
void merge_heads(float* out, const float* o, int64_t B, int64_t T, int64_t H, int64_t Dh, int64_t ld = 0);
void merge_heads_backward(float* dout_heads, const float* dout, int64_t B, int64_t T, int64_t H, int64_t Dh,
                          int64_t ld = 0);

}  // namespace mt
