// mla_heads.h — layout changes of multi-head latent attention (DeepSeek-V2
// section 2.1): per-head keys and values from the decompressed latent and the
// one RoPE key all heads share. Pure copies (and, backward, a sum over heads).
// Legend: N = B*T tokens, H heads, Dn / Dr q-k dims without / with RoPE,
// Dqk = Dn + Dr, Dv value dim; each head's q and k are [nope (Dn) | rope (Dr)].
#pragma once
#include <cstdint>

namespace mt {

struct MlaHeadDims {
  int64_t B, T, H, Dn, Dr, Dv;
};

// k (B, H, T, Dqk): [kv[n, h Dn : (h+1) Dn] | k_rope[n]]; v (B, H, T, Dv):
// kv[n, H Dn + h Dv : ...]. kv (N, H (Dn + Dv)) holds W_UK's then W_UV's
// outputs; k_rope (N, Dr) already rotated.
void mla_kv_heads(float* k, float* v, const float* kv, const float* k_rope, const MlaHeadDims& d);

// dkv written; dk_rope[n] = sum over heads of dk[.., h, t, Dn:] in head order
// (one task per token: the same sum for any thread count).
void mla_kv_heads_backward(float* dkv, float* dk_rope, const float* dk, const float* dv, const MlaHeadDims& d);

// x (N, Da + Db) -> a (N, Da), b (N, Db); concat_columns is its inverse
// (and its backward).
// ld: x's row length (0 = Da + Db), for columns inside a wider product output.
void split_columns(float* a, float* b, const float* x, int64_t N, int64_t Da, int64_t Db, int64_t ld = 0);
void concat_columns(float* x, const float* a, const float* b, int64_t N, int64_t Da, int64_t Db, int64_t ld = 0);

}  // namespace mt
