// mtp.h — one multi-token-prediction module (DeepSeek-V3 section 2.2, eqs. 21-25) and the schedule of
// the MTP loss weight. Module k (1-based, k = 1..mtp_depth) at input position i:
//   h'_i  = M_k [RMSNorm_h(h^{k-1}_i); RMSNorm_e(Emb(t_{i+k}))]      M_k (D, 2D)
//   h^k   = TRM_k(h')                 one block like the model's last layer (attention + its FFN/MoE)
//   p_i   = softmax(Head(RMSNorm_head(h^k_i)))   predicts t_{i+1+k}
// h^0 is the main model's last residual stream (before its final norm), h^k the module's block output;
// Emb and Head are the model's (shared). RMSNorm_head is the module's own: DeepSeek-V3's released MTP
// weights carry one per module (shared_head.norm), and it is what the planner counts (3 D per module).
// L_MTP = lambda / D_mtp * sum_k CE_k joins the objective (eq. 25). Legend: B batch, T time, N = B T
// tokens, D model dim.
#pragma once
#include <cstdint>
#include <vector>

#include "model/attention_block.h"
#include "model/block_context.h"
#include "model/buffer_sizer.h"
#include "model/moe_block.h"
#include "model/weights.h"

namespace mt {

// lambda at a step that starts after `tokens_seen` training tokens: mtp_loss_weight before
// mtp_loss_weight_switch_tokens, mtp_loss_weight_late from it on (DeepSeek-V3: 0.3 for the first 10T
// tokens, then 0.1). A pure function of the data position, so a resumed run uses the same weights.
double mtp_loss_weight_at(const ModelConfig& c, int64_t tokens_seen);

struct MtpActs {
  std::vector<int32_t> tok, tgt;            // (N): t_{i+k} (embedded), t_{i+1+k} (predicted)
  std::vector<float> e, rstd_h, rstd_e;     // (N, D) embedding of tok, (N), (N)
  std::vector<float> cat;                   // (N, 2D): [RMSNorm_h(h^{k-1}); RMSNorm_e(e)], M_k's input
  std::vector<float> x_in, x_mid, h;        // (N, D): h', after attention, h^k
  AttnActs attn;
  FfnActs ffn;
  GemmActivation hf;                        // (N, D): head-norm output, read only by the head's GEMMs
  std::vector<float> rstd_f, dhf;           // (N), (N, D): its statistics and the head's gradient of it
  // Sizes every buffer through `s`; `unit` is the module's index in the layout (n_layers + k - 1).
  void allocate(const ModelConfig& c, int64_t unit, int64_t B, int64_t T, BufferSizer& s);
  int64_t bytes() const;
};

struct MtpScratch {
  std::vector<float> dcat, dhalf, de;       // (N, 2D), (N, D), (N, D)
  void allocate(const ModelConfig& c, int64_t B, int64_t T, BufferSizer& s);
  int64_t bytes() const;
};

// a.tok, a.tgt of module k (1-based) from B rows of `stride` >= T + 1 + k tokens; with context
// parallelism the T rows are at positions pos (null: 0..T-1) of each row.
void mtp_tokens(MtpActs& a, const int32_t* tokens, int64_t stride, int64_t k, int64_t B, int64_t T,
                const int32_t* pos = nullptr);

// From h^{k-1} (N, D) to a.h (h^k) and a.hf (its head-normed form, for the shared head the caller runs).
// `embed` is the shared (V, D) table; ctx.w serves the module's unit; router_bias (E) or null.
void mtp_module_forward(MtpActs& a, FfnStats& stats, const float* h_prev, const float* embed, const MtpOffsets& w,
                        const float* router_bias, int64_t unit, const BlockContext& ctx);

enum class Accumulate { kNo, kYes };

// dres (N, D): on entry the gradient w.r.t. h^k from module k + 1 (read only with Accumulate::kYes),
// to which the head's gradient (a.dhf, through RMSNorm_head) is added; on exit the gradient w.r.t.
// h^{k-1} that this module contributes. dembed (V, D) accumulates the embedding's gradient.
void mtp_module_backward(float* dres, Accumulate from_next, MtpScratch& s, AttnScratch& as, FfnScratch& fs,
                         const MtpActs& a, const float* h_prev, float* dembed, const MtpOffsets& w, int64_t unit,
                         float aux_coef, float z_coef, const BlockContext& ctx);

}  // namespace mt
