// attention_block.h — pre-norm GQA attention sub-block of one layer:
// x_mid = x_in + Wo · attn(rope(qk_norm(split(W_qkv · rmsnorm(x_in))))).
// With model.attention = "mla" every call goes to model/mla_block.h instead.
// Activations are sized once from the config (no allocation per step).
#pragma once
#include <cstdint>
#include <vector>

#include "model/block_context.h"
#include "model/buffer_sizer.h"
#include "model/mla_block.h"
#include "model/weights.h"

namespace mt {

struct AttnActs {
  GemmActivation a;                    // (N, D): normed input, read only by W_qkv's GEMMs
  std::vector<float> rstd_a;           // (N)
  std::vector<float> qkv;              // (N, (H + 2 Hkv) Dh)
  GemmActivation q, k, v;              // (B, H|Hkv, T, Dh), after qk-norm and RoPE: read only by the
                                       // attention kernel's products (fp32 with qk_norm, rotated in place)
  std::vector<float> q_raw, k_raw;     // before qk-norm (qk_norm only)
  std::vector<float> rstd_q, rstd_k;   // (B*H*T), (B*Hkv*T) (qk_norm only)
  std::vector<float> lse;              // (B, H, T)
  GemmActivation o_flat;               // (N, H Dh): the attention kernel's output, token-major (Wo's GEMMs and
                                       // the attention backward's row sums read it)
  MlaActs mla;                         // attention = "mla": the only buffers sized
  // Sizes every buffer through `s` (allocates, or only counts for the planner).
  void allocate(const ModelConfig& c, int64_t layer, int64_t B, int64_t T, BufferSizer& s);
  int64_t bytes() const;               // data bytes currently held
};

// Scratch shared by all layers during backward.
struct AttnScratch {
  std::vector<float> dqkv, dq, dk, dv, do_flat, da;
  std::vector<float> dq_raw;  // qk_norm only: dq before the q norm
  MlaScratch mla;  // attention = "mla": the only buffers sized
  void allocate(const ModelConfig& c, int64_t B, int64_t T, BufferSizer& s);
  int64_t bytes() const;
};

// x_mid (N, D) = x_in + attention(x_in).
void attention_block_forward(float* x_mid, AttnActs& a, const float* x_in, const AttnOffsets& w,
                             int64_t layer, const BlockContext& ctx);

// dres (N, D): gradient w.r.t. x_mid on entry, w.r.t. x_in on exit.
void attention_block_backward(float* dres, AttnScratch& s, const AttnActs& a, const float* x_in,
                              const AttnOffsets& w, int64_t layer, const BlockContext& ctx);

}  // namespace mt
