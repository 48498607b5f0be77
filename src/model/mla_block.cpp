// mla_block.cpp — orchestration only: every loop over elements lives in
// kernels/cpu. Backward mirrors forward in reverse order.
#include "model/mla_block.h"

#include <algorithm>

#include "core/check.h"
#include "kernels/cpu/heads.h"
#include "kernels/cpu/mla_heads.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"
#include "model/attention_kernel.h"

namespace mt {
namespace {
struct Dims {
  int64_t B, T, N, D, H, Dq, Dc, Dn, Dr, Dqk, Dv;
  int64_t P;  // proj's row: H Dqk query columns, then Dc + Dr latent and RoPE-key columns
};
Dims dims_of(const ModelConfig& c, int64_t B, int64_t T) {
  const int64_t H = c.n_heads, Dqk = c.qk_head_dim(), Dc = c.kv_lora_rank, Dr = c.qk_rope_head_dim;
  return Dims{B,  T,   B * T,        c.d_model,        H, c.q_lora_rank, Dc, c.qk_nope_head_dim,
              Dr, Dqk, c.v_head_dim, H * Dqk + Dc + Dr};
}
// o and dout token-major, as Wo's GEMM reads them.
AttentionDims attn_dims(const BlockContext& ctx, const Dims& d, int64_t layer) {
  AttentionDims a{d.B, d.H, d.H, d.T, d.Dqk, ctx.c->is_local(layer) ? ctx.c->window : 0, d.Dv};
  a.token_major_out = true;
  a.doc_start = ctx.doc_start;
  if (ctx.cp) {  // this process's rows against the whole sequence's keys
    a.T = ctx.T_seq;
    a.Tq = d.T;
    a.q_pos = ctx.q_pos;
  }
  return a;
}
// Context parallelism: the whole sequence's (or the window's) kv latent and
// RoPE key gathered — Dc + Dr values a token, not H (Dqk + Dv) — then
// W_UKV run on them here, into ctx.cp_buf's k and v.
void decompress_sequence(const BlockContext& ctx, const MlaActs& a, const MlaOffsets& m, const Dims& d, int64_t layer) {
  ContextBuffers& cb = *ctx.cp_buf;
  const int64_t window = ctx.c->is_local(layer) ? ctx.c->window : 0, T = ctx.T_seq, Nf = d.B * T;
  const OperandForm lf = a.ckv_n.form;
  ctx.cp->gather(cb.latent.data(), a.ckv_n.in().data, d.B, 1, d.Dc, lf == OperandForm::kBf16 ? 2 : 4, window);
  ctx.cp->gather(cb.rope_key.data(), a.kr.data(), d.B, 1, d.Dr, 4, window);
  linear_forward(cb.kvf.data(), GemmInput{cb.latent.data(), lf}, ctx.p(m.wukv), Nf, d.H * (d.Dn + d.Dv), d.Dc,
                 ctx.prec);
  mla_kv_heads(cb.k.data(), cb.v.data(), cb.kvf.data(), cb.rope_key.data(), MlaHeadDims{d.B, T, d.H, d.Dn, d.Dr, d.Dv});
}
MlaHeadDims head_dims(const Dims& d) { return MlaHeadDims{d.B, d.T, d.H, d.Dn, d.Dr, d.Dv}; }
}  // namespace

void MlaActs::allocate(const ModelConfig& c, int64_t B, int64_t T, BufferSizer& s) {
  const Dims d = dims_of(c, B, T);
  s(a, d.N * d.D);
  s(rstd_a, d.N);
  if (d.Dq > 0) {
    s(cq, d.N * d.Dq);
    s(cq_n, d.N * d.Dq);
    s(rstd_cq, d.N);
  }
  s(proj, d.N * d.P);
  s(ckv, d.N * d.Dc);
  s(ckv_n, d.N * d.Dc);
  s(rstd_ckv, d.N);
  s(kr, d.N * d.Dr);
  s(kvf, d.N * d.H * (d.Dn + d.Dv));
  s(q, d.N * d.H * d.Dqk);
  s(k, d.N * d.H * d.Dqk);
  s(v, d.N * d.H * d.Dv);
  s(lse, d.N * d.H);
  s(o_flat, d.N * d.H * d.Dv);
}

int64_t MlaActs::bytes() const {
  return vector_bytes(a) + vector_bytes(rstd_a) + vector_bytes(cq) + vector_bytes(cq_n) + vector_bytes(rstd_cq) +
         vector_bytes(proj) + vector_bytes(ckv) + vector_bytes(ckv_n) + vector_bytes(rstd_ckv) + vector_bytes(kr) +
         vector_bytes(kvf) + vector_bytes(q) + vector_bytes(k) + vector_bytes(v) + vector_bytes(lse) +
         vector_bytes(o_flat);
}

void MlaScratch::allocate(const ModelConfig& c, int64_t B, int64_t T, BufferSizer& s) {
  const Dims d = dims_of(c, B, T);
  s(do_flat, d.N * d.H * d.Dv);
  s(dq, d.N * d.H * d.Dqk);
  s(dk, d.N * d.H * d.Dqk);
  s(dv, d.N * d.H * d.Dv);
  s(dproj, d.N * d.P);
  s(dkvf, d.N * d.H * (d.Dn + d.Dv));
  s(dkr, d.N * d.Dr);
  s(dckv_n, d.N * d.Dc);
  s(dckv, d.N * d.Dc);
  if (d.Dq > 0) {
    s(dcq_n, d.N * d.Dq);
    s(dcq, d.N * d.Dq);
  }
  s(da, d.N * d.D);
}

int64_t MlaScratch::bytes() const {
  return vector_bytes(do_flat) + vector_bytes(dq) + vector_bytes(dk) + vector_bytes(dv) + vector_bytes(dproj) +
         vector_bytes(dkvf) + vector_bytes(dkr) + vector_bytes(dckv_n) + vector_bytes(dckv) + vector_bytes(dcq_n) +
         vector_bytes(dcq) + vector_bytes(da);
}

void mla_block_forward(float* x_mid, MlaActs& a, const float* x_in, const AttnOffsets& w, int64_t layer,
                       const BlockContext& ctx) {
  const ModelConfig& c = *ctx.c;
  const Dims d = dims_of(c, ctx.B, ctx.T);
  const MlaOffsets& m = w.mla;
  const float eps = float(c.norm_eps);
  rmsnorm_forward(a.a.out(), a.a.form, a.rstd_a.data(), x_in, ctx.p(w.norm), d.N, d.D, eps);
  // Queries (DeepSeek-V2 eq. 37-39) and the kv latent with its RoPE key (eqs. 9-11, 43-44) into one row per
  // token. Without a query latent all three read a: one product with W_Q, W_DKV and W_KR, which the layout
  // keeps adjacent (model/weights.cpp), instead of two narrower ones.
  const int64_t HQ = d.H * d.Dqk;
  if (d.Dq > 0) {
    linear_forward(a.cq.data(), a.a.in(), ctx.p(m.wdq), d.N, d.Dq, d.D, ctx.prec);
    rmsnorm_forward(a.cq_n.out(), a.cq_n.form, a.rstd_cq.data(), a.cq.data(), ctx.p(m.q_norm), d.N, d.Dq, eps);
    gemm(a.proj.data(), a.cq_n.in(), ctx.p(m.wq), GemmShape{d.N, HQ, d.Dq, Trans::kNo, Trans::kYes, 0, 0, d.P}, 0.0f,
         ctx.prec);
    gemm(a.proj.data() + HQ, a.a.in(), ctx.p(m.wdkv),
         GemmShape{d.N, d.Dc + d.Dr, d.D, Trans::kNo, Trans::kYes, 0, 0, d.P}, 0.0f, ctx.prec);
  } else {
    MT_CHECK(m.wdkv == m.wq + HQ * d.D, "MLA: W_DKV does not follow W_Q in the parameter layout");
    linear_forward(a.proj.data(), a.a.in(), ctx.p(m.wq), d.N, d.P, d.D, ctx.prec);
  }
  merge_heads_backward(a.q.data(), a.proj.data(), d.B, d.T, d.H, d.Dqk, d.P);  // token-major -> (B, H, T, Dqk)
  rope_forward_part(a.q.data() + d.Dn, ctx.rope_cos, ctx.rope_sin, d.B * d.H, d.T, d.Dr, d.Dqk);
  split_columns(a.ckv.data(), a.kr.data(), a.proj.data() + HQ, d.N, d.Dc, d.Dr, d.P);
  rope_forward(a.kr.data(), a.kr.data(), ctx.rope_cos, ctx.rope_sin, d.B, d.T, d.Dr);
  rmsnorm_forward(a.ckv_n.out(), a.ckv_n.form, a.rstd_ckv.data(), a.ckv.data(), ctx.p(m.kv_norm), d.N, d.Dc, eps);
  QkvOperands qkv{a.q.data(), a.k.data(), a.v.data()};
  if (ctx.cp) {
    decompress_sequence(ctx, a, m, d, layer);
    qkv = QkvOperands{a.q.data(), ctx.cp_buf->k.data(), ctx.cp_buf->v.data()};
  } else {
    linear_forward(a.kvf.data(), a.ckv_n.in(), ctx.p(m.wukv), d.N, d.H * (d.Dn + d.Dv), d.Dc, ctx.prec);
    mla_kv_heads(a.k.data(), a.v.data(), a.kvf.data(), a.kr.data(), head_dims(d));
  }
  run_attention_forward(a.o_flat.out(), a.o_flat.form, a.lse.data(), qkv, attn_dims(ctx, d, layer), ctx.prec,
                        ctx.attention);
  gemm_add(x_mid, a.o_flat.in(), ctx.p(w.wo), GemmShape{d.N, d.D, d.H * d.Dv, Trans::kNo, Trans::kYes}, x_in, ctx.prec);
}

void mla_block_backward(float* dres, MlaScratch& s, const MlaActs& a, const float* x_in, const AttnOffsets& w,
                        int64_t layer, const BlockContext& ctx) {
  const ModelConfig& c = *ctx.c;
  const Dims d = dims_of(c, ctx.B, ctx.T);
  const MlaOffsets& m = w.mla;
  const int64_t HV = d.H * d.Dv;
  linear_backward(s.do_flat.data(), ctx.gw(w.wo, d.D * HV), dres, a.o_flat.in(), ctx.p(w.wo), d.N, d.D, HV, 0.0f,
                  ctx.prec);
  if (ctx.cp) {
    // The sequence's keys and values again; their gradients from this process's queries back through W_UKV
    // (its weight gradient over every position) to the latent and RoPE key, summed over the ranks into its rows.
    ContextBuffers& cb = *ctx.cp_buf;
    const int64_t window = c.is_local(layer) ? c.window : 0, T = ctx.T_seq, Nf = d.B * T;
    decompress_sequence(ctx, a, m, d, layer);
    run_attention_backward(s.dq.data(), cb.dk.data(), cb.dv.data(), s.do_flat.data(),
                           QkvOperands{a.q.data(), cb.k.data(), cb.v.data()}, a.o_flat.in().data, a.o_flat.form,
                           a.lse.data(), attn_dims(ctx, d, layer), ctx.prec, ctx.attention);
    mla_kv_heads_backward(cb.dkvf.data(), cb.drope.data(), cb.dk.data(), cb.dv.data(),
                          MlaHeadDims{d.B, T, d.H, d.Dn, d.Dr, d.Dv});
    linear_backward(cb.dlatent.data(), ctx.gw(m.wukv, d.H * (d.Dn + d.Dv) * d.Dc), cb.dkvf.data(),
                    GemmInput{cb.latent.data(), a.ckv_n.form}, ctx.p(m.wukv), Nf, d.H * (d.Dn + d.Dv), d.Dc, 0.0f,
                    ctx.prec);
    ctx.cp->reduce(s.dckv_n.data(), cb.dlatent.data(), d.B, 1, d.Dc, window);
    ctx.cp->reduce(s.dkr.data(), cb.drope.data(), d.B, 1, d.Dr, window);
    rope_backward(s.dkr.data(), s.dkr.data(), ctx.rope_cos, ctx.rope_sin, d.B, d.T, d.Dr);
  } else {
    run_attention_backward(s.dq.data(), s.dk.data(), s.dv.data(), s.do_flat.data(),
                           QkvOperands{a.q.data(), a.k.data(), a.v.data()}, a.o_flat.in().data, a.o_flat.form,
                           a.lse.data(), attn_dims(ctx, d, layer), ctx.prec, ctx.attention);
    // Keys and values, back to the input's normed copy (written into s.da).
    mla_kv_heads_backward(s.dkvf.data(), s.dkr.data(), s.dk.data(), s.dv.data(), head_dims(d));
    rope_backward(s.dkr.data(), s.dkr.data(), ctx.rope_cos, ctx.rope_sin, d.B, d.T, d.Dr);
    linear_backward(s.dckv_n.data(), ctx.gw(m.wukv, d.H * (d.Dn + d.Dv) * d.Dc), s.dkvf.data(), a.ckv_n.in(),
                    ctx.p(m.wukv), d.N, d.H * (d.Dn + d.Dv), d.Dc, 0.0f, ctx.prec);
  }
  rmsnorm_backward(s.dckv.data(), ctx.g(m.kv_norm), s.dckv_n.data(), a.ckv.data(), ctx.p(m.kv_norm), a.rstd_ckv.data(),
                   d.N, d.Dc, 0.0f);
  // The gradient of proj, laid out as proj: queries, then latent and RoPE key.
  const int64_t HQ = d.H * d.Dqk;
  concat_columns(s.dproj.data() + HQ, s.dckv.data(), s.dkr.data(), d.N, d.Dc, d.Dr, d.P);
  rope_backward_part(s.dq.data() + d.Dn, ctx.rope_cos, ctx.rope_sin, d.B * d.H, d.T, d.Dr, d.Dqk);
  merge_heads(s.dproj.data(), s.dq.data(), d.B, d.T, d.H, d.Dqk, d.P);
  if (d.Dq > 0) {
    linear_backward(s.da.data(), ctx.gw(m.wdkv, (d.Dc + d.Dr) * d.D), s.dproj.data() + HQ, a.a.in(), ctx.p(m.wdkv), d.N,
                    d.Dc + d.Dr, d.D, 0.0f, ctx.prec, d.P);
    linear_backward(s.dcq_n.data(), ctx.gw(m.wq, HQ * d.Dq), s.dproj.data(), a.cq_n.in(), ctx.p(m.wq), d.N, HQ, d.Dq,
                    0.0f, ctx.prec, d.P);
    rmsnorm_backward(s.dcq.data(), ctx.g(m.q_norm), s.dcq_n.data(), a.cq.data(), ctx.p(m.q_norm), a.rstd_cq.data(), d.N,
                     d.Dq, 0.0f);
    linear_backward(s.da.data(), ctx.gw(m.wdq, d.Dq * d.D), s.dcq.data(), a.a.in(), ctx.p(m.wdq), d.N, d.Dq, d.D, 1.0f,
                    ctx.prec);
  } else {  // W_Q, W_DKV and W_KR (and their gradients) adjacent: one product each way
    linear_backward(s.da.data(), ctx.gw(m.wq, d.P * d.D), s.dproj.data(), a.a.in(), ctx.p(m.wq), d.N, d.P, d.D, 0.0f,
                    ctx.prec);
  }
  rmsnorm_backward(dres, ctx.g(w.norm), s.da.data(), x_in, ctx.p(w.norm), a.rstd_a.data(), d.N, d.D, 1.0f);
}

}  // namespace mt
