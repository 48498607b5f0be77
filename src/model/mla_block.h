// mla_block.h — pre-norm multi-head latent attention sub-block of one layer
// (DeepSeek-V2 section 2.1, eqs. 9-11 and 37-40; DeepSeek-V3 section 2.1.1):
//   a = RMSNorm(x);  q = W_UQ RMSNorm(W_DQ a)  (or W_Q a when Dq = 0)
//   [c_kv | k_r] = [W_DKV; W_KR] a;  [k_nope | v] = [W_UK; W_UV] RMSNorm(c_kv)
//   head h: q_h = [q_nope | RoPE(q_rope)], k_h = [k_nope_h | RoPE(k_r)] (one RoPE key for all heads)
//   x_mid = x + W_O concat_h softmax(q_h k_h^T / sqrt(Dn + Dr)) v_h   (window on "L" layers)
// Keys and values are materialised per head and run through the same blocked
// attention kernel as GQA (Hkv = H, Dh = Dn + Dr, its own Dv); decoding keeps
// only c_kv and k_r (model/decoder.h).
// Legend: N = B*T, D model, H heads, Dq / Dc query / kv latents, Dn / Dr q-k
// dims without / with RoPE, Dqk = Dn + Dr, Dv value dim.
#pragma once
#include <cstdint>
#include <vector>

#include "model/block_context.h"
#include "model/buffer_sizer.h"
#include "model/weights.h"

namespace mt {

struct MlaActs {
  GemmActivation a;                      // (N, D): normed input, read only by GEMMs
  std::vector<float> rstd_a;             // (N)
  std::vector<float> cq, rstd_cq;        // (N, Dq), (N): query latent (Dq > 0)
  GemmActivation cq_n;                   // (N, Dq): its norm, read only by W_UQ's GEMMs
  std::vector<float> proj;               // (N, H Dqk + Dc + Dr): [query projection | W_DKV / W_KR output]; with
                                         // Dq = 0 one product of a with W_Q, W_DKV and W_KR (adjacent rows)
  std::vector<float> ckv, rstd_ckv;      // (N, Dc), (N): kv latent
  GemmActivation ckv_n;                  // (N, Dc): its norm, read only by W_UKV's GEMMs
  std::vector<float> kr;                 // (N, Dr) shared RoPE key, rotated
  std::vector<float> kvf;                // (N, H (Dn + Dv)) W_UK / W_UV output
  std::vector<float> q, k;               // (B, H, T, Dqk) after RoPE
  std::vector<float> v;                  // (B, H, T, Dv)
  std::vector<float> lse;                // (B, H, T)
  GemmActivation o_flat;                 // (N, H Dv): the attention kernel's output, token-major (Wo's GEMMs and
                                         // the attention backward's row sums read it)
  void allocate(const ModelConfig& c, int64_t B, int64_t T, BufferSizer& s);
  int64_t bytes() const;
};

// Backward scratch shared by all layers.
struct MlaScratch {
  std::vector<float> do_flat;  // (N, H Dv)
  std::vector<float> dq, dk, dv;           // (B, H, T, Dqk) x2, (B, H, T, Dv)
  std::vector<float> dproj, dkvf, dkr;     // (N, H Dqk + Dc + Dr) as proj, (N, H (Dn + Dv)), (N, Dr)
  std::vector<float> dckv_n, dckv;         // (N, Dc) x2: kv latent after / before its norm
  std::vector<float> dcq_n, dcq;           // (N, Dq) x2: query latent after / before its norm (Dq > 0)
  std::vector<float> da;                   // (N, D)
  void allocate(const ModelConfig& c, int64_t B, int64_t T, BufferSizer& s);
  int64_t bytes() const;
};

// x_mid (N, D) = x_in + MLA(x_in). ctx.rope_* are tables for Dr dims.
void mla_block_forward(float* x_mid, MlaActs& a, const float* x_in, const AttnOffsets& w, int64_t layer,
                       const BlockContext& ctx);

// dres (N, D): gradient w.r.t. x_mid on entry, w.r.t. x_in on exit.
void mla_block_backward(float* dres, MlaScratch& s, const MlaActs& a, const float* x_in, const AttnOffsets& w,
                        int64_t layer, const BlockContext& ctx);

}  // namespace mt
