// attention_block.cpp — orchestration only: every loop over elements lives in
// kernels/cpu.
#include "model/attention_block.h"

#include <algorithm>

#include "kernels/cpu/heads.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"
#include "model/attention_kernel.h"

namespace mt {
namespace {
struct Dims {
  int64_t B, T, N, D, H, Hkv, Dh, QKV;
};
Dims dims_of(const ModelConfig& c, int64_t layer, int64_t B, int64_t T) {
  Dims d{B, T, B * T, c.d_model, c.n_heads, c.kv_heads(layer), c.head_dim(), 0};
  d.QKV = (d.H + 2 * d.Hkv) * d.Dh;
  return d;
}
// The kernel writes o (and reads dout) token-major, as Wo's GEMM reads them.
AttentionDims attn_dims(const BlockContext& ctx, const Dims& d, int64_t layer) {
  AttentionDims a{d.B, d.H, d.Hkv, d.T, d.Dh, ctx.c->is_local(layer) ? ctx.c->window : 0};
  a.token_major_out = true;
  a.doc_start = ctx.doc_start;
  if (ctx.cp) {  // this process's rows against the whole sequence's keys
    a.T = ctx.T_seq;
    a.Tq = d.T;
    a.q_pos = ctx.q_pos;
  }
  return a;
}
// Context parallelism: the whole sequence's K and V (what this process's
// queries read of them) gathered into ctx.cp_buf; the operands then read them.
QkvOperands gather_keys(const BlockContext& ctx, const Dims& d, int64_t layer, QkvOperands in) {
  if (!ctx.cp) return in;
  const int64_t bytes = in.form == OperandForm::kBf16 ? 2 : 4, window = ctx.c->is_local(layer) ? ctx.c->window : 0;
  ctx.cp->gather(ctx.cp_buf->k.data(), in.k, d.B, d.Hkv, d.Dh, bytes, window);
  ctx.cp->gather(ctx.cp_buf->v.data(), in.v, d.B, d.Hkv, d.Dh, bytes, window);
  in.k = ctx.cp_buf->k.data();
  in.v = ctx.cp_buf->v.data();
  return in;
}
QkvOperands qkv_operands(const AttnActs& a) {
  return {a.q.storage.data(), a.k.storage.data(), a.v.storage.data(), a.q.form};
}
}  // namespace

void AttnActs::allocate(const ModelConfig& c, int64_t layer, int64_t B, int64_t T, BufferSizer& s) {
  if (c.mla()) return mla.allocate(c, B, T, s);
  Dims d = dims_of(c, layer, B, T);
  s(a, d.N * d.D);
  s(rstd_a, d.N);
  s(qkv, d.N * d.QKV);
  // Without qk-norm split_qkv_rope writes them in the GEMM form; with it
  // the norm's fp32 output is rotated in place, so they stay fp32.
  const OperandForm qkv_form = c.qk_norm ? OperandForm::kFp32 : s.gemm_inputs();
  s(q, d.N * d.H * d.Dh, qkv_form);
  s(k, d.N * d.Hkv * d.Dh, qkv_form);
  s(v, d.N * d.Hkv * d.Dh, qkv_form);
  if (c.qk_norm) {
    s(q_raw, d.N * d.H * d.Dh);
    s(k_raw, d.N * d.Hkv * d.Dh);
    s(rstd_q, d.N * d.H);
    s(rstd_k, d.N * d.Hkv);
  }
  s(lse, d.N * d.H);
  s(o_flat, d.N * d.H * d.Dh);
}

int64_t AttnActs::bytes() const {
  return vector_bytes(a) + vector_bytes(rstd_a) + vector_bytes(qkv) + vector_bytes(q) + vector_bytes(k) +
         vector_bytes(v) + vector_bytes(q_raw) + vector_bytes(k_raw) + vector_bytes(rstd_q) +
         vector_bytes(rstd_k) + vector_bytes(lse) + vector_bytes(o_flat) + mla.bytes();
}

void AttnScratch::allocate(const ModelConfig& c, int64_t B, int64_t T, BufferSizer& s) {
  if (c.mla()) return mla.allocate(c, B, T, s);
  int64_t maxq = 0;
  for (int64_t l = 0; l < c.n_layers; ++l) maxq = std::max(maxq, dims_of(c, l, B, T).QKV);
  const int64_t N = B * T, HD = c.n_heads * c.head_dim();
  s(dqkv, N * maxq);
  s(dq, N * HD);
  s(dk, N * HD);
  s(dv, N * HD);
  if (c.qk_norm) s(dq_raw, N * HD);
  s(do_flat, N * HD);
  s(da, N * c.d_model);
}

int64_t AttnScratch::bytes() const {
  return vector_bytes(dqkv) + vector_bytes(dq) + vector_bytes(dk) + vector_bytes(dv) +
         vector_bytes(dq_raw) + vector_bytes(do_flat) + vector_bytes(da) + mla.bytes();
}

void attention_block_forward(float* x_mid, AttnActs& a, const float* x_in, const AttnOffsets& w,
                             int64_t layer, const BlockContext& ctx) {
  const ModelConfig& c = *ctx.c;
  if (c.mla()) return mla_block_forward(x_mid, a.mla, x_in, w, layer, ctx);
  const Dims d = dims_of(c, layer, ctx.B, ctx.T);
  rmsnorm_forward(a.a.out(), a.a.form, a.rstd_a.data(), x_in, ctx.p(w.norm), d.N, d.D, float(c.norm_eps));
  linear_forward(a.qkv.data(), a.a.in(), ctx.p(w.wqkv), d.N, d.QKV, d.D, ctx.prec);
  if (c.qk_norm) {
    float* q = a.q.storage.data();  // fp32 form (allocate)
    float* k = a.k.storage.data();
    split_qkv(a.q_raw.data(), a.k_raw.data(), a.v.storage.data(), a.qkv.data(), d.B, d.T, d.H, d.Hkv, d.Dh);
    rmsnorm_forward(q, a.rstd_q.data(), a.q_raw.data(), ctx.p(w.q_norm), d.N * d.H, d.Dh, float(c.norm_eps));
    rmsnorm_forward(k, a.rstd_k.data(), a.k_raw.data(), ctx.p(w.k_norm), d.N * d.Hkv, d.Dh, float(c.norm_eps));
    rope_forward(q, q, ctx.rope_cos, ctx.rope_sin, d.B * d.H, d.T, d.Dh);
    rope_forward(k, k, ctx.rope_cos, ctx.rope_sin, d.B * d.Hkv, d.T, d.Dh);
  } else {
    split_qkv_rope(a.q.out(), a.k.out(), a.v.out(), a.q.form, a.qkv.data(), ctx.rope_cos, ctx.rope_sin, d.B, d.T,
                   d.H, d.Hkv, d.Dh);
  }
  run_attention_forward(a.o_flat.out(), a.o_flat.form, a.lse.data(), gather_keys(ctx, d, layer, qkv_operands(a)),
                        attn_dims(ctx, d, layer), ctx.prec, ctx.attention);
  // x_mid = x_in + o_flat Wo^T
  gemm_add(x_mid, a.o_flat.in(), ctx.p(w.wo), GemmShape{d.N, d.D, d.H * d.Dh, Trans::kNo, Trans::kYes}, x_in, ctx.prec);
}

void attention_block_backward(float* dres, AttnScratch& s, const AttnActs& a, const float* x_in,
                              const AttnOffsets& w, int64_t layer, const BlockContext& ctx) {
  const ModelConfig& c = *ctx.c;
  if (c.mla()) return mla_block_backward(dres, s.mla, a.mla, x_in, w, layer, ctx);
  const Dims d = dims_of(c, layer, ctx.B, ctx.T);
  const int64_t HD = d.H * d.Dh;
  linear_backward(s.do_flat.data(), ctx.gw(w.wo, d.D * HD), dres, a.o_flat.in(), ctx.p(w.wo), d.N, d.D, HD, 0.0f,
                  ctx.prec);
  if (ctx.cp) {  // dK, dV of the whole sequence from this process's queries, summed over the ranks into its rows
    const int64_t window = c.is_local(layer) ? c.window : 0;
    run_attention_backward(s.dq.data(), ctx.cp_buf->dk.data(), ctx.cp_buf->dv.data(), s.do_flat.data(),
                           gather_keys(ctx, d, layer, qkv_operands(a)), a.o_flat.in().data, a.o_flat.form, a.lse.data(),
                           attn_dims(ctx, d, layer), ctx.prec, ctx.attention);
    ctx.cp->reduce(s.dk.data(), ctx.cp_buf->dk.data(), d.B, d.Hkv, d.Dh, window);
    ctx.cp->reduce(s.dv.data(), ctx.cp_buf->dv.data(), d.B, d.Hkv, d.Dh, window);
  } else {
    run_attention_backward(s.dq.data(), s.dk.data(), s.dv.data(), s.do_flat.data(), qkv_operands(a), a.o_flat.in().data,
                           a.o_flat.form, a.lse.data(), attn_dims(ctx, d, layer), ctx.prec, ctx.attention);
  }
  OperandForm dqkv_form = OperandForm::kFp32;
  if (c.qk_norm) {
    rope_backward(s.dq.data(), s.dq.data(), ctx.rope_cos, ctx.rope_sin, d.B * d.H, d.T, d.Dh);
    rope_backward(s.dk.data(), s.dk.data(), ctx.rope_cos, ctx.rope_sin, d.B * d.Hkv, d.T, d.Dh);
    // dk before the k norm goes to do_flat, free once the attention backward has read it.
    float* dq_raw = s.dq_raw.data();
    float* dk_raw = s.do_flat.data();
    rmsnorm_backward(dq_raw, ctx.g(w.q_norm), s.dq.data(), a.q_raw.data(), ctx.p(w.q_norm),
                     a.rstd_q.data(), d.N * d.H, d.Dh, 0.0f);
    rmsnorm_backward(dk_raw, ctx.g(w.k_norm), s.dk.data(), a.k_raw.data(), ctx.p(w.k_norm),
                     a.rstd_k.data(), d.N * d.Hkv, d.Dh, 0.0f);
    split_qkv_backward(s.dqkv.data(), dq_raw, dk_raw, s.dv.data(), d.B, d.T, d.H, d.Hkv, d.Dh);
  } else {
    // Only the projection's products read dqkv: merged in their form.
    dqkv_form = operand_form(ctx.prec);
    split_qkv_rope_backward(s.dqkv.data(), dqkv_form, s.dq.data(), s.dk.data(), s.dv.data(), ctx.rope_cos, ctx.rope_sin,
                            d.B, d.T, d.H, d.Hkv, d.Dh);
  }
  linear_backward(s.da.data(), ctx.gw(w.wqkv, d.QKV * d.D), GemmInput(s.dqkv.data(), dqkv_form), a.a.in(),
                  ctx.p(w.wqkv), d.N, d.QKV, d.D, 0.0f, ctx.prec);
  rmsnorm_backward(dres, ctx.g(w.norm), s.da.data(), x_in, ctx.p(w.norm), a.rstd_a.data(), d.N, d.D, 1.0f);
}

}  // namespace mt
