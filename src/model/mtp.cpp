// mtp.cpp — the multi-token-prediction module's forward and backward, composed of the existing
// kernels and blocks (see mtp.h); thread-count invariant because each piece is.
#include "model/mtp.h"

#include <algorithm>

#include "kernels/cpu/embedding.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/rmsnorm.h"
#include "core/token_flags.h"

namespace mt {

double mtp_loss_weight_at(const ModelConfig& c, int64_t tokens_seen) {
  const bool late = c.mtp_loss_weight_switch_tokens > 0 && tokens_seen >= c.mtp_loss_weight_switch_tokens;
  return late ? c.mtp_loss_weight_late : c.mtp_loss_weight;
}

void MtpActs::allocate(const ModelConfig& c, int64_t unit, int64_t B, int64_t T, BufferSizer& s) {
  const int64_t N = B * T, D = c.d_model;
  s(tok, N);
  s(tgt, N);
  s(e, N * D);
  s(rstd_h, N);
  s(rstd_e, N);
  s(cat, N * 2 * D);
  s(x_in, N * D);
  s(x_mid, N * D);
  s(h, N * D);
  attn.allocate(c, unit, B, T, s);
  ffn.allocate(c, unit, B, T, s);
  s(hf, N * D);
  s(rstd_f, N);
  s(dhf, N * D);
}

int64_t MtpActs::bytes() const {
  return vector_bytes(tok) + vector_bytes(tgt) + vector_bytes(e) + vector_bytes(rstd_h) + vector_bytes(rstd_e) +
         vector_bytes(cat) + vector_bytes(x_in) + vector_bytes(x_mid) + vector_bytes(h) + attn.bytes() + ffn.bytes() +
         vector_bytes(hf) + vector_bytes(rstd_f) + vector_bytes(dhf);
}

void MtpScratch::allocate(const ModelConfig& c, int64_t B, int64_t T, BufferSizer& s) {
  const int64_t N = B * T, D = c.d_model;
  s(dcat, N * 2 * D);
  s(dhalf, N * D);
  s(de, N * D);
}

int64_t MtpScratch::bytes() const { return vector_bytes(dcat) + vector_bytes(dhalf) + vector_bytes(de); }

void mtp_tokens(MtpActs& a, const int32_t* tokens, int64_t stride, int64_t k, int64_t B, int64_t T,
                const int32_t* pos) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const int64_t p = pos ? pos[t] : t;
      a.tok[b * T + t] = token_id(tokens[b * stride + p + k]);
      a.tgt[b * T + t] = target_of(tokens[b * stride + p + k + 1]);
    }
}

namespace {

// C columns of N rows between buffers of different row strides (the halves of M_k's input).
void copy_columns(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t N, int64_t C) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) std::copy(src + n * ld_src, src + n * ld_src + C, dst + n * ld_dst);
}

}  // namespace

void mtp_module_forward(MtpActs& a, FfnStats& stats, const float* h_prev, const float* embed, const MtpOffsets& w,
                        const float* router_bias, int64_t unit, const BlockContext& ctx) {
  const ModelConfig& c = *ctx.c;
  const int64_t N = ctx.N, D = c.d_model;
  const float eps = float(c.norm_eps);
  embedding_forward(a.e.data(), a.tok.data(), embed, N, D);
  // Normalise each half straight into its columns of cat: x_in and x_mid are free (N, D) scratch here.
  rmsnorm_forward(a.x_in.data(), a.rstd_h.data(), h_prev, ctx.p(w.h_norm), N, D, eps);
  rmsnorm_forward(a.x_mid.data(), a.rstd_e.data(), a.e.data(), ctx.p(w.e_norm), N, D, eps);
  copy_columns(a.cat.data(), 2 * D, a.x_in.data(), D, N, D);
  copy_columns(a.cat.data() + D, 2 * D, a.x_mid.data(), D, N, D);
  linear_forward(a.x_in.data(), a.cat.data(), ctx.p(w.proj), N, D, 2 * D, ctx.prec);
  attention_block_forward(a.x_mid.data(), a.attn, a.x_in.data(), w.block.attn, unit, ctx);
  ffn_block_forward(a.h.data(), a.ffn, stats, a.x_mid.data(), w.block, router_bias, unit, ctx);
  rmsnorm_forward(a.hf.out(), a.hf.form, a.rstd_f.data(), a.h.data(), ctx.p(w.head_norm), N, D, eps);
}

void mtp_module_backward(float* dres, Accumulate from_next, MtpScratch& s, AttnScratch& as, FfnScratch& fs,
                         const MtpActs& a, const float* h_prev, float* dembed, const MtpOffsets& w, int64_t unit,
                         float aux_coef, float z_coef, const BlockContext& ctx) {
  const int64_t N = ctx.N, D = ctx.c->d_model;
  rmsnorm_backward(dres, ctx.g(w.head_norm), a.dhf.data(), a.h.data(), ctx.p(w.head_norm), a.rstd_f.data(), N, D,
                   from_next == Accumulate::kYes ? 1.0f : 0.0f);
  ffn_block_backward(dres, fs, a.ffn, a.x_mid.data(), w.block, unit, aux_coef, z_coef, ctx);
  attention_block_backward(dres, as, a.attn, a.x_in.data(), w.block.attn, unit, ctx);
  // dres is now d h'; through M_k to both normed halves.
  linear_backward(s.dcat.data(), ctx.gw(w.proj, D * 2 * D), dres, a.cat.data(), ctx.p(w.proj), N, D, 2 * D, 0.0f,
                  ctx.prec);
  copy_columns(s.dhalf.data(), D, s.dcat.data() + D, 2 * D, N, D);
  rmsnorm_backward(s.de.data(), ctx.g(w.e_norm), s.dhalf.data(), a.e.data(), ctx.p(w.e_norm), a.rstd_e.data(), N, D,
                   0.0f);
  embedding_backward(dembed, s.de.data(), a.tok.data(), N, D);
  copy_columns(s.dhalf.data(), D, s.dcat.data(), 2 * D, N, D);
  rmsnorm_backward(dres, ctx.g(w.h_norm), s.dhalf.data(), h_prev, ctx.p(w.h_norm), a.rstd_h.data(), N, D, 0.0f);
}

}  // namespace mt
