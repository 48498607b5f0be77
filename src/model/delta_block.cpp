// delta_block.cpp — orchestration only: every loop over elements lives in kernels/cpu
// (gated_delta.h for the recurrence, delta_gates.h for the pieces around it).
#include "model/delta_block.h"

#include <algorithm>

#include "core/check.h"
#include "core/phase_timer.h"
#include "kernels/cpu/delta_gates.h"
#include "kernels/cpu/gated_delta.h"
#include "kernels/cpu/heads.h"
#include "kernels/cpu/rmsnorm.h"

namespace mt {
namespace {

struct Dims {
  int64_t B, T, N, D, H, Dk, Dv, P;
  // Column offsets of the projection's blocks.
  int64_t cq, ck, cv, cz, ca, cb;
};
Dims dims_of(const ModelConfig& c, int64_t B, int64_t T) {
  Dims d{B, T, B * T, c.d_model, c.delta_h(), c.delta_dk(), c.delta_dv(), delta_proj_width(c), 0, 0, 0, 0, 0, 0};
  d.ck = d.H * d.Dk;
  d.cv = 2 * d.H * d.Dk;
  d.cz = d.cv + d.H * d.Dv;
  d.ca = d.cz + d.H * d.Dv;
  d.cb = d.ca + d.H;
  return d;
}
// At bf16 precision the chunk's products take bf16 operands, as the projections do.
GatedDeltaDims kernel_dims(const ModelConfig& c, const Dims& d, const BlockContext& ctx) {
  return GatedDeltaDims{d.B, d.H, d.T, d.Dk, d.Dv, c.delta_chunk, ctx.doc_start, ctx.prec == MatmulPrecision::kBf16};
}
}  // namespace

int64_t delta_proj_width(const ModelConfig& c) {
  return 2 * c.delta_h() * c.delta_dk() + 2 * c.delta_h() * c.delta_dv() + 2 * c.delta_h();
}

void DeltaActs::allocate(const ModelConfig& c, int64_t B, int64_t T, BufferSizer& s) {
  const Dims d = dims_of(c, B, T);
  const int64_t NC = gated_delta_chunks(GatedDeltaDims{d.B, d.H, d.T, d.Dk, d.Dv, c.delta_chunk});
  s(a, d.N * d.D);
  s(rstd_a, d.N);
  s(proj, d.N * d.P);
  s(q, d.N * d.H * d.Dk);
  s(k, d.N * d.H * d.Dk);
  s(rn_q, d.N * d.H);
  s(rn_k, d.N * d.H);
  s(v, d.N * d.H * d.Dv);
  s(g, d.N * d.H);
  s(beta, d.N * d.H);
  s(states, d.B * d.H * NC * d.Dv * d.Dk);
  s(o, d.N * d.H * d.Dv);
  s(o_flat, d.N * d.H * d.Dv);
  s(rstd_o, d.N * d.H);
  s(on, d.N * d.H * d.Dv);
  s(y, d.N * d.H * d.Dv);
}

int64_t DeltaActs::bytes() const {
  int64_t b = vector_bytes(a) + vector_bytes(y);
  for (const auto* v : {&rstd_a, &proj, &q, &k, &rn_q, &rn_k, &this->v, &g, &beta, &states, &o, &o_flat, &rstd_o, &on})
    b += vector_bytes(*v);
  return b;
}

void DeltaScratch::allocate(const ModelConfig& c, int64_t B, int64_t T, BufferSizer& s) {
  if (!c.has_delta()) return;
  const Dims d = dims_of(c, B, T);
  s(dproj, d.N * d.P);
  s(dq, d.N * d.H * d.Dk);
  s(dk, d.N * d.H * d.Dk);
  s(dv, d.N * d.H * d.Dv);
  s(dg, d.N * d.H);
  s(dbeta, d.N * d.H);
  s(do_heads, d.N * d.H * d.Dv);
  s(dflat, d.N * d.H * std::max(d.Dk, d.Dv));
  s(dflat2, d.N * d.H * std::max(d.Dk, d.Dv));
  s(da, d.N * d.D);
}

int64_t DeltaScratch::bytes() const {
  int64_t b = 0;
  for (const auto* v : {&dproj, &dq, &dk, &dv, &dg, &dbeta, &do_heads, &dflat, &dflat2, &da}) b += vector_bytes(*v);
  return b;
}

void delta_block_forward(float* x_mid, DeltaActs& a, const float* x_in, const DeltaOffsets& w,
                         const BlockContext& ctx) {
  const ModelConfig& c = *ctx.c;
  const Dims d = dims_of(c, ctx.B, ctx.T);
  const float eps = float(c.norm_eps);
  rmsnorm_forward(a.a.out(), a.a.form, a.rstd_a.data(), x_in, ctx.p(w.norm), d.N, d.D, eps);
  linear_forward(a.proj.data(), a.a.in(), ctx.p(w.w_in), d.N, d.P, d.D, ctx.prec);
  const float* proj = a.proj.data();
  l2norm_heads_forward(a.q.data(), a.rn_q.data(), proj + d.cq, d.P, d.B, d.T, d.H, d.Dk, delta_l2_eps());
  l2norm_heads_forward(a.k.data(), a.rn_k.data(), proj + d.ck, d.P, d.B, d.T, d.H, d.Dk, delta_l2_eps());
  gather_heads(a.v.data(), proj + d.cv, d.P, d.B, d.T, d.H, d.Dv);
  // The recurrence runs along the whole sequence: with context parallelism a state would pass between ranks.
  MT_CHECK(ctx.cp == nullptr, "context parallelism does not run gated-delta layers (the trainer refuses dist.cp)");
  delta_gates_forward(a.g.data(), a.beta.data(), proj + d.ca, proj + d.cb, d.P, ctx.p(w.A_log), ctx.p(w.dt_bias),
                      d.B, d.T, d.H);
  {
    ScopedPhase phase(Phase::kAttention);
    gated_delta_forward(a.o.data(), a.states.data(), a.q.data(), a.k.data(), a.v.data(), a.g.data(), a.beta.data(),
                        kernel_dims(c, d, ctx));
  }
  merge_heads(a.o_flat.data(), a.o.data(), d.B, d.T, d.H, d.Dv);
  rmsnorm_forward(a.on.data(), a.rstd_o.data(), a.o_flat.data(), ctx.p(w.o_norm), d.N * d.H, d.Dv, eps);
  silu_gate_forward(a.y.out(), a.y.form, a.on.data(), proj + d.cz, d.P, d.N, d.H * d.Dv);
  gemm_add(x_mid, a.y.in(), ctx.p(w.wo), GemmShape{d.N, d.D, d.H * d.Dv, Trans::kNo, Trans::kYes}, x_in, ctx.prec);
}

void delta_block_backward(float* dres, DeltaScratch& s, const DeltaActs& a, const float* x_in,
                          const DeltaOffsets& w, const BlockContext& ctx) {
  const ModelConfig& c = *ctx.c;
  const Dims d = dims_of(c, ctx.B, ctx.T);
  const int64_t HV = d.H * d.Dv;
  const float* proj = a.proj.data();
  float* dproj = s.dproj.data();
  linear_backward(s.dflat.data(), ctx.gw(w.wo, d.D * HV), dres, a.y.in(), ctx.p(w.wo), d.N, d.D, HV, 0.0f, ctx.prec);
  silu_gate_backward(s.dflat2.data(), dproj + d.cz, s.dflat.data(), a.on.data(), proj + d.cz, d.P, d.N, HV);
  rmsnorm_backward(s.dflat.data(), ctx.g(w.o_norm), s.dflat2.data(), a.o_flat.data(), ctx.p(w.o_norm),
                   a.rstd_o.data(), d.N * d.H, d.Dv, 0.0f);
  merge_heads_backward(s.do_heads.data(), s.dflat.data(), d.B, d.T, d.H, d.Dv);
  {
    ScopedPhase phase(Phase::kAttention);
    gated_delta_backward(s.dq.data(), s.dk.data(), s.dv.data(), s.dg.data(), s.dbeta.data(), s.do_heads.data(),
                         a.q.data(), a.k.data(), a.v.data(), a.g.data(), a.beta.data(), a.states.data(),
                         kernel_dims(c, d, ctx));
  }
  delta_gates_backward(dproj + d.ca, dproj + d.cb, ctx.g(w.A_log), ctx.g(w.dt_bias), s.dg.data(), s.dbeta.data(),
                       proj + d.ca, proj + d.cb, d.P, ctx.p(w.A_log), ctx.p(w.dt_bias), d.B, d.T, d.H);
  l2norm_heads_backward(dproj + d.cq, d.P, s.dq.data(), a.q.data(), a.rn_q.data(), d.B, d.T, d.H, d.Dk);
  l2norm_heads_backward(dproj + d.ck, d.P, s.dk.data(), a.k.data(), a.rn_k.data(), d.B, d.T, d.H, d.Dk);
  gather_heads_backward(dproj + d.cv, s.dv.data(), d.P, d.B, d.T, d.H, d.Dv);
  linear_backward(s.da.data(), ctx.gw(w.w_in, d.P * d.D), dproj, a.a.in(), ctx.p(w.w_in), d.N, d.P, d.D, 0.0f,
                  ctx.prec);
  rmsnorm_backward(dres, ctx.g(w.norm), s.da.data(), x_in, ctx.p(w.norm), a.rstd_a.data(), d.N, d.D, 1.0f);
}

}  // namespace mt
