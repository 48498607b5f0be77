// mla_decode.cpp — orchestration of the absorbed MLA step: the same
// projections and norms as mla_block_forward, W_UK / W_UV as one small GEMM
// per head, attention over the latent rows by the cached-attention kernel
// (one shared "kv head" whose value is the key's c_kv prefix).
#include "model/mla_decode.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/attention_cached.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/mla_heads.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"

namespace mt {

void MlaDecodeActs::allocate(const ModelConfig& c, int64_t rows) {
  const int64_t n = rows, H = c.n_heads, Dq = c.q_lora_rank, Dc = c.kv_lora_rank, Dn = c.qk_nope_head_dim,
                Dr = c.qk_rope_head_dim, Dv = c.v_head_dim;
  a.resize(size_t(n * c.d_model));
  rstd.resize(size_t(n));
  cq.resize(size_t(n * Dq));
  cq_n.resize(size_t(n * Dq));
  qf.resize(size_t(n * H * (Dn + Dr)));
  q_nope.resize(size_t(n * H * Dn));
  q_rope.resize(size_t(n * H * Dr));
  q_lat.resize(size_t(n * H * Dc));
  q_abs.resize(size_t(n * H * (Dc + Dr)));
  ckr.resize(size_t(n * (Dc + Dr)));
  ckv.resize(size_t(n * Dc));
  ckv_n.resize(size_t(n * Dc));
  kr.resize(size_t(n * Dr));
  lat.resize(size_t(n * (Dc + Dr)));
  o_lat.resize(size_t(n * H * Dc));
  o_flat.resize(size_t(n * H * Dv));
}

void mla_decode_forward(float* x_mid, MlaDecodeActs& a, KvCache& cache, const float* x, const float* params,
                        const AttnOffsets& w, int64_t layer, const ModelConfig& c, const DecodeRows& rows) {
  const int64_t n = rows.n, D = c.d_model, H = c.n_heads, Dq = c.q_lora_rank, Dc = c.kv_lora_rank,
                Dn = c.qk_nope_head_dim, Dr = c.qk_rope_head_dim, Dqk = Dn + Dr, Dv = c.v_head_dim, L = Dc + Dr;
  const MlaOffsets& m = w.mla;
  const float* p = params;
  const float eps = float(c.norm_eps);
  const MatmulPrecision fp32 = MatmulPrecision::kFp32;
  rmsnorm_forward(a.a.data(), a.rstd.data(), x, p + w.norm, n, D, eps);
  // Queries as in training (DeepSeek-V2 eqs. 37-39), token-major (n, H, Dqk).
  if (Dq > 0) {
    linear_forward(a.cq.data(), a.a.data(), p + m.wdq, n, Dq, D, fp32);
    rmsnorm_forward(a.cq_n.data(), a.rstd.data(), a.cq.data(), p + m.q_norm, n, Dq, eps);
    linear_forward(a.qf.data(), a.cq_n.data(), p + m.wq, n, H * Dqk, Dq, fp32);
  } else {
    linear_forward(a.qf.data(), a.a.data(), p + m.wq, n, H * Dqk, D, fp32);
  }
  split_columns(a.q_nope.data(), a.q_rope.data(), a.qf.data(), n * H, Dn, Dr);
  rope_forward_at(a.q_rope.data(), a.q_rope.data(), rows.rope_cos, rows.rope_sin, rows.pos, n, H, Dr);
  // Absorbed query: q_lat_h = q_nope_h W_UK,h, W_UK,h the (Dn, Dc) rows h Dn.. of wukv.
  for (int64_t h = 0; h < H; ++h)
    gemm(a.q_lat.data() + h * Dc, a.q_nope.data() + h * Dn, p + m.wukv + h * Dn * Dc,
         GemmShape{n, Dc, Dn, Trans::kNo, Trans::kNo, H * Dn, Dc, H * Dc}, 0.0f, fp32);
  concat_columns(a.q_abs.data(), a.q_lat.data(), a.q_rope.data(), n * H, Dc, Dr);
  // The new rows' cache rows [RMSNorm(c_kv) | RoPE(k_r)] (eqs. 9-10, 43).
  linear_forward(a.ckr.data(), a.a.data(), p + m.wdkv, n, L, D, fp32);
  split_columns(a.ckv.data(), a.kr.data(), a.ckr.data(), n, Dc, Dr);
  rmsnorm_forward(a.ckv_n.data(), a.rstd.data(), a.ckv.data(), p + m.kv_norm, n, Dc, eps);
  rope_forward_at(a.kr.data(), a.kr.data(), rows.rope_cos, rows.rope_sin, rows.pos, n, 1, Dr);
  concat_columns(a.lat.data(), a.ckv_n.data(), a.kr.data(), n, Dc, Dr);
  // MQA over the latent rows: keys [c_kv | k_r], values their c_kv prefix.
  CachedAttentionDims d{n, H, 1, L, cache.capacity(layer), c.is_local(layer) ? c.window : 0};
  d.Dv = Dc;
  d.ld_v = L;
  d.scale = 1.0f / std::sqrt(float(Dqk));
  if (cache.dtype() == KvDtype::kF32) {
    float* kc = cache.latent_f32(layer);
    attention_cached_forward(a.o_lat.data(), a.q_abs.data(), a.lat.data(), a.lat.data(), kc, kc, rows.seq, rows.pos,
                             rows.first_row, d, rows.doc_start);
    kv_cache_append(kc, static_cast<float*>(nullptr), a.lat.data(), nullptr, rows.seq, rows.pos, d);
  } else {
    bf16* kc = cache.latent_bf16(layer);
    attention_cached_forward(a.o_lat.data(), a.q_abs.data(), a.lat.data(), a.lat.data(), kc, kc, rows.seq, rows.pos,
                             rows.first_row, d, rows.doc_start);
    kv_cache_append(kc, static_cast<bf16*>(nullptr), a.lat.data(), nullptr, rows.seq, rows.pos, d);
  }
  // o_h = W_UV,h o_lat_h, W_UV,h the (Dv, Dc) rows H Dn + h Dv.. of wukv; then W_O.
  for (int64_t h = 0; h < H; ++h)
    gemm(a.o_flat.data() + h * Dv, a.o_lat.data() + h * Dc, p + m.wukv + (H * Dn + h * Dv) * Dc,
         GemmShape{n, Dv, Dc, Trans::kNo, Trans::kYes, H * Dc, Dc, H * Dv}, 0.0f, fp32);
  std::copy(x, x + n * D, x_mid);
  gemm(x_mid, a.o_flat.data(), p + w.wo, GemmShape{n, D, H * Dv, Trans::kNo, Trans::kYes}, 1.0f, fp32);
}

}  // namespace mt
