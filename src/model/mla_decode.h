// mla_decode.h — one multi-head latent attention sub-block of incremental
// decoding (model/decoder.h) in the absorbed form of DeepSeek-V2 section
// 2.1.4 / appendix C: the cache holds per token only [c_kv | k_r]
// (model/kv_cache.h), never per-head keys or values. For head h
//   q_lat_h = W_UK,h^T q_nope_h                 (Dc)   W_UK folded into the query
//   s_j     = (q_lat_h . c_kv_j + RoPE(q_rope_h) . k_r_j) / sqrt(Dn + Dr)
//   o_h     = W_UV,h sum_j softmax(s)_j c_kv_j  (Dv)   W_UV applied after attention
// which is the training forward (model/mla_block.h) reassociated: q_nope_h .
// (W_UK,h c_kv) = (W_UK,h^T q_nope_h) . c_kv, and W_UV,h commutes with the
// weighted sum over positions. The scores scale by the training head width
// Dn + Dr, not by the Dc + Dr dims the kernel sums over.
//
// W_UK and W_UV are applied to every new row, from the checkpoint's own
// tensors, not multiplied into W_UQ and W_O once at load: the products
// (H Dc x Dq and D x H Dc) are larger than their factors whenever Dc > Dn, Dv
// (moe-512-mla: 1.05 M values each against 0.39 M + 0.13 M and 0.26 M +
// 0.13 M), so precomputing would raise both the weights read and the
// multiply-adds per token, while the per-row cost, H Dc (Dn + Dv), does not
// grow with the context. DeepSeek-V3's reference inference does the same
// ("absorb" mode).
// Legend: n new rows, D model dim, H heads, Dq / Dc query / kv latents, Dn /
// Dr q-k dims without / with RoPE, Dqk = Dn + Dr, Dv value dim.
#pragma once
#include <cstdint>
#include <vector>

#include "model/config.h"
#include "model/kv_cache.h"
#include "model/weights.h"

namespace mt {

// Scratch for up to `rows` new rows.
struct MlaDecodeActs {
  std::vector<float> a, rstd;                 // (n, D), (n)
  std::vector<float> cq, cq_n;                // (n, Dq) (Dq > 0)
  std::vector<float> qf, q_nope, q_rope;      // (n, H Dqk), (n, H, Dn), (n, H, Dr)
  std::vector<float> q_lat, q_abs;            // (n, H, Dc), (n, H, Dc + Dr) absorbed query
  std::vector<float> ckr, ckv, ckv_n, kr;     // (n, Dc + Dr), (n, Dc) x2, (n, Dr)
  std::vector<float> lat;                     // (n, Dc + Dr) the new rows' cache rows
  std::vector<float> o_lat, o_flat;           // (n, H, Dc) attended latents, (n, H Dv)
  void allocate(const ModelConfig& c, int64_t rows);
};

// The new rows of one forward call (decoder.h): row r is sequence seq[r] at
// position pos[r], its run starting at row first_row[r]; RoPE tables
// (max_len, Dr/2); with document masking the position where row r's document
// begins (doc_start[r]; null without).
struct DecodeRows {
  int64_t n;
  const int32_t* seq;
  const int64_t* pos;
  const int64_t* first_row;
  const float* rope_cos;
  const float* rope_sin;
  const int64_t* doc_start = nullptr;
};

// x_mid (n, D) = x + MLA(x), attending over `cache`'s rows of `layer` and the
// new rows, whose [c_kv | k_r] are then appended to the cache.
void mla_decode_forward(float* x_mid, MlaDecodeActs& a, KvCache& cache, const float* x, const float* params,
                        const AttnOffsets& w, int64_t layer, const ModelConfig& c, const DecodeRows& rows);

}  // namespace mt
