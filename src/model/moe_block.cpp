// moe_block.cpp — orchestration of the dense and MoE FFN sub-blocks.
#include "model/moe_block.h"

#include <algorithm>
#include <vector>

#include "core/phase_timer.h"
#include "kernels/cpu/bulk_copy.h"
#include "kernels/cpu/grouped_swiglu.h"
#include "kernels/cpu/moe_dispatch.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/router.h"
#include "model/swiglu_ffn.h"

namespace mt {
namespace {

DispatchDims dispatch_dims(const ModelConfig& c, int64_t B, int64_t T) {
  const int64_t G = c.group_size(T);
  DispatchDims d{B * T, c.n_experts, c.top_k, G, c.capacity(G), kExpertRowAlign};
  d.order = c.drop_policy == DropPolicy::kProbs ? DropOrder::kScore : DropOrder::kArrival;
  d.seq_len = T;
  return d;
}

RouterDims router_dims(const ModelConfig& c, int64_t N, int64_t T) {
  return RouterDims{N, c.n_experts, c.top_k,
                    c.router_score == RouterScore::kSoftmax ? ScoreFn::kSoftmax : ScoreFn::kSigmoid,
                    c.router_renormalize, c.group_size(T)};
}

// The weights and, in the backward, the gradients of the experts this
// process holds, as the grouped kernel takes them.
struct ExpertWeightPointers {
  std::vector<const float*> w13, w2;
  std::vector<WeightGrad> dw13, dw2;
  ExpertWeightPointers(const MoeOffsets& mw, const ExpertRows& er, const BlockContext& ctx, Pass pass) {
    const int64_t F = ctx.c->d_expert, Din = ctx.c->expert_in_dim();
    for (int64_t i = 0; i < er.count; ++i) {
      const SwigluOffsets& we = mw.experts[er.first + i];
      w13.push_back(ctx.pe(we.w13));
      w2.push_back(ctx.pe(we.w2));
      if (pass == Pass::kBackward) {  // the grouped products write all of each expert's gradient
        dw13.push_back(ctx.gwe(we.w13, 2 * F * Din));
        dw2.push_back(ctx.gwe(we.w2, Din * F));
      }
    }
  }
  ExpertGroup group(const ExpertRows& er, int64_t F, int64_t Din) const {
    return ExpertGroup{er.count, er.begin, F, Din, w13.data(), w2.data()};
  }
};

void add(float* out, const float* a, const float* b, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

}  // namespace

void FfnActs::allocate(const ModelConfig& c, int64_t layer, int64_t B, int64_t T, BufferSizer& s) {
  const int64_t N = B * T, D = c.d_model;
  s(m, N * D);
  s(rstd_m, N);
  if (!c.is_moe(layer)) {
    s(h13, N * 2 * c.d_ff);
    s(z, N * c.d_ff);
    return;
  }
  const int64_t E = c.n_experts, K = c.top_k, F = c.d_expert, Din = c.expert_in_dim();
  const int64_t R = moe_max_rows(dispatch_dims(c, B, T));
  s(logits, N * E);
  s(scores, N * E);
  s(idx, N * K);
  s(slot, N * K);
  s(gate, N * K);
  s(begin, E + 1);
  s(kept, E);
  s(row_token, R);
  if (c.d_latent > 0) {
    s(mlat, N * c.d_latent);
    s(mln, N * c.d_latent);
    s(rstd_l, N);
  }
  s(xe, R * Din);
  s(he, R * 2 * F);
  s(ze, R * F);
  s(ye, R * Din);
  if (c.d_latent > 0) s(comb, N * Din);  // the up-projection's input; without it the combine adds into the output
  sh13.resize(c.n_shared_experts);
  sz.resize(c.n_shared_experts);
  for (int64_t e = 0; e < c.n_shared_experts; ++e) {
    s(sh13[e], N * 2 * F);
    s(sz[e], N * F);
  }
  if (c.moe_out_norm) {
    s(total, N * D);
    s(rstd_o, N);
  }
}

int64_t FfnActs::bytes() const {
  return vector_bytes(m) + vector_bytes(rstd_m) + vector_bytes(h13) + vector_bytes(z) + vector_bytes(logits) +
         vector_bytes(scores) + vector_bytes(idx) + vector_bytes(slot) + vector_bytes(gate) +
         vector_bytes(begin) + vector_bytes(kept) + vector_bytes(row_token) + vector_bytes(mlat) +
         vector_bytes(mln) + vector_bytes(rstd_l) + vector_bytes(xe) + vector_bytes(he) + vector_bytes(ze) +
         vector_bytes(ye) + vector_bytes(comb) + vector_bytes(sh13) + vector_bytes(sz) + vector_bytes(total) +
         vector_bytes(rstd_o);
}

void FfnScratch::allocate(const ModelConfig& c, int64_t B, int64_t T, BufferSizer& s) {
  const int64_t N = B * T, D = c.d_model;
  int64_t hid = c.d_ff, rows = N;
  s(dm, N * D);
  s(dtotal, N * D);
  if (c.n_experts > 0) {
    const int64_t E = c.n_experts, K = c.top_k, Din = c.expert_in_dim();
    const int64_t R = moe_max_rows(dispatch_dims(c, B, T));
    hid = std::max(hid, c.d_expert);
    rows = std::max(rows, R);
    s(dcomb, N * Din);
    s(dxin, N * Din);
    if (c.d_latent > 0) s(dmlat, N * c.d_latent);
    s(dlogits, N * E);
    s(dgate, N * K);
    s(dye, R * Din);
    s(dxe, R * Din);
  }
  s(dz, rows * hid);
  s(dh13, rows * 2 * hid);
}

int64_t FfnScratch::bytes() const {
  return vector_bytes(dm) + vector_bytes(dtotal) + vector_bytes(dcomb) + vector_bytes(dxin) +
         vector_bytes(dmlat) + vector_bytes(dlogits) + vector_bytes(dgate) + vector_bytes(dye) +
         vector_bytes(dxe) + vector_bytes(dz) + vector_bytes(dh13);
}

void ffn_block_forward(float* x_out, FfnActs& a, FfnStats& stats, const float* x_mid,
                       const LayerOffsets& w, const float* router_bias, int64_t layer,
                       const BlockContext& ctx) {
  const ModelConfig& c = *ctx.c;
  const int64_t N = ctx.N, D = c.d_model;
  rmsnorm_forward(a.m.data(), a.rstd_m.data(), x_mid, ctx.p(w.ffn_norm), N, D, float(c.norm_eps));
  if (!w.moe) {  // x_out = x_mid + ffn(m), the residual added by the down product
    const SwigluFfnDims dd{N, c.d_ff, D};
    swiglu_ffn_up(a.h13.data(), a.z.out(), a.z.form, a.m.data(), ctx.p(w.dense.w13), dd, ctx.prec);
    swiglu_ffn_down_onto(x_out, a.z.out(), a.z.form, ctx.p(w.dense.w2), dd, x_mid, ctx.prec);
    return;
  }
  const MoeOffsets& mw = w.moe_w;
  const int64_t E = c.n_experts, K = c.top_k, F = c.d_expert, Din = c.expert_in_dim();
  const RouterDims rd = router_dims(c, N, ctx.T);
  // The router stays fp32 in every precision: routing decisions are discrete
  // and bf16 logits would flip near-ties between otherwise identical runs.
  linear_forward(a.logits.data(), a.m.data(), ctx.p(mw.router), N, E, D, MatmulPrecision::kFp32);
  if (c.router_force_balance) router_random_logits(a.logits.data(), layer, N, E, ctx.T);
  {
    ScopedPhase phase(Phase::kMoeDispatch);
    router_topk_forward(a.idx.data(), a.gate.data(), a.scores.data(), a.logits.data(), router_bias, rd);
  }
  {
    ScopedPhase phase(Phase::kMoeDispatch);
    router_losses(&stats.aux_loss, &stats.z_loss, a.logits.data(), a.scores.data(), a.idx.data(), rd);
  }
  const DispatchDims dd = dispatch_dims(c, ctx.B, ctx.T);
  {
    ScopedPhase phase(Phase::kMoeDispatch);
    stats.dropped = moe_assign(a.slot.data(), a.begin.data(), a.row_token.data(), a.kept.data(),
                               a.idx.data(), a.scores.data(), dd);
  }
  stats.assignments = N * K;
  // Each dropped assignment (slot -1, only under a capacity) charged to its
  // token's sequence: this process's batch rows, wherever the experts run.
  stats.dropped_per_sequence.assign(size_t(ctx.B), 0);
  if (dd.capacity > 0)
    for (int64_t i = 0; i < N * K; ++i) stats.dropped_per_sequence[size_t(i / K / ctx.T)] += a.slot[i] < 0 ? 1 : 0;
  stats.load.assign(E, 0);
  for (int64_t i = 0; i < N * K; ++i) stats.load[a.idx[i]]++;
  a.rows = a.begin[E];

  const float* xin = a.m.data();
  if (c.d_latent > 0) {
    linear_forward(a.mlat.data(), a.m.data(), ctx.p(mw.down), N, c.d_latent, D, ctx.prec);
    rmsnorm_forward(a.mln.data(), a.rstd_l.data(), a.mlat.data(), ctx.p(mw.latent_norm), N, c.d_latent,
                    float(c.norm_eps));
    xin = a.mln.data();
  }
  {
    ScopedPhase phase(Phase::kMoeDispatch);
    moe_gather(a.xe.data(), xin, a.row_token.data(), a.rows, Din, Din);
  }
  // The routed rows travel while this process computes what does not need
  // them: the shared experts' up halves while the rows go out, their down
  // halves while the outputs come back. That hides the transfer wherever
  // something beside the cores moves the bytes (RDMA, NCCL); on one CPU host
  // it measured level (docs/distributed.md, "Overlap"). One process: nothing
  // in flight, the same order.
  ExpertDispatcher& ex = *ctx.experts;
  const SwigluFfnDims sd{N, F, D};
  ex.dispatch_start(layer, a, Din);
  for (size_t s = 0; s < mw.shared.size(); ++s) {
    swiglu_ffn_up(a.sh13[s].data(), a.sz[s].out(), a.sz[s].form, a.m.data(), ctx.p(mw.shared[s].w13), sd, ctx.prec);
    ex.progress();
  }
  // The experts this process holds, on the rows the dispatcher brought them
  // (one process: all experts, on a.xe in place).
  const ExpertRows er = ex.dispatch_finish(layer, a, Din);
  ExpertWeightPointers ew(mw, er, ctx, Pass::kForward);
  grouped_swiglu_forward(er.y, er.h, er.z, er.x, ew.group(er, F, Din), ctx.prec);
  ex.combine_start(layer, a, Din);

  // total = base + shared experts + up(comb) or comb, summed in that order.
  // base is the residual x_mid, so the sum lands in x_out directly; with an
  // output norm there is no base and total is kept for the norm's backward.
  float* total = c.moe_out_norm ? a.total.data() : x_out;
  const float* base = c.moe_out_norm ? nullptr : x_mid;
  if (!mw.shared.empty()) {
    for (size_t s = 0; s < mw.shared.size(); ++s) {
      const void* z = a.sz[s].storage.data();
      if (s == 0 && base)  // the residual added by the first shared expert's down product
        swiglu_ffn_down_onto(total, z, a.sz[s].form, ctx.p(mw.shared[s].w2), sd, base, ctx.prec);
      else
        swiglu_ffn_down(total, z, a.sz[s].form, ctx.p(mw.shared[s].w2), sd, s > 0 ? 1.0f : 0.0f, ctx.prec);
      ex.progress();
    }
    base = total;
  }
  ex.combine_finish(layer, a, Din);
  if (c.d_latent > 0) {
    {
      ScopedPhase phase(Phase::kMoeDispatch);
      moe_combine(a.comb.data(), a.ye.data(), a.slot.data(), a.gate.data(), N, K, Din, 0.0f);
    }
    const GemmShape up{N, D, c.d_latent, Trans::kNo, Trans::kYes};
    if (base)  // total = base + comb up^T, base added by the product (base may be total already)
      gemm_add(total, a.comb.data(), ctx.p(mw.up), up, base, ctx.prec);
    else
      gemm(total, a.comb.data(), ctx.p(mw.up), up, 0.0f, ctx.prec);
  } else {
    // Straight into total: the bits of combining into a buffer and adding it to base.
    ScopedPhase phase(Phase::kMoeDispatch);
    if (base)
      moe_combine_add(total, base, a.ye.data(), a.slot.data(), a.gate.data(), N, K, Din);
    else
      moe_combine(total, a.ye.data(), a.slot.data(), a.gate.data(), N, K, Din, 0.0f);
  }
  if (c.moe_out_norm) {
    rmsnorm_forward(x_out, a.rstd_o.data(), total, ctx.p(mw.out_norm), N, D, float(c.norm_eps));
    add(x_out, x_out, x_mid, N * D);
  }
}

void ffn_block_backward(float* dres, FfnScratch& s, const FfnActs& a, const float* x_mid,
                        const LayerOffsets& w, int64_t layer, float aux_coef, float z_coef,
                        const BlockContext& ctx) {
  const ModelConfig& c = *ctx.c;
  const int64_t N = ctx.N, D = c.d_model;
  float* dm = s.dm.data();
  if (!w.moe) {
    swiglu_ffn_backward(dm, ctx.gw(w.dense.w13, 2 * c.d_ff * D), ctx.gw(w.dense.w2, D * c.d_ff), s.dz.data(),
                        s.dh13.data(), dres, a.m.data(), a.h13.data(), a.z.in(), ctx.p(w.dense.w13), ctx.p(w.dense.w2),
                        SwigluFfnDims{N, c.d_ff, D}, 0.0f, ctx.prec);
    rmsnorm_backward(dres, ctx.g(w.ffn_norm), dm, x_mid, ctx.p(w.ffn_norm), a.rstd_m.data(), N, D, 1.0f);
    return;
  }
  const MoeOffsets& mw = w.moe_w;
  const int64_t E = c.n_experts, K = c.top_k, F = c.d_expert, Din = c.expert_in_dim();
  const float* dtotal = dres;
  if (c.moe_out_norm) {
    rmsnorm_backward(s.dtotal.data(), ctx.g(mw.out_norm), dres, a.total.data(), ctx.p(mw.out_norm),
                     a.rstd_o.data(), N, D, 0.0f);
    dtotal = s.dtotal.data();
  }
  // As in the forward, the transfers overlap work that does not need them:
  // the shared experts' backward while the output gradients go out, the
  // router's backward while the input gradients come back. dm still sums
  // shared, routed, router in that order.
  ExpertDispatcher& ex = *ctx.experts;
  const float* dcomb = dtotal;
  if (c.d_latent > 0) {
    linear_backward(s.dcomb.data(), ctx.gw(mw.up, D * c.d_latent), dtotal, a.comb.data(), ctx.p(mw.up), N, D,
                    c.d_latent, 0.0f, ctx.prec);
    dcomb = s.dcomb.data();
  }
  {
    ScopedPhase phase(Phase::kMoeDispatch);
    moe_combine_backward(s.dye.data(), s.dgate.data(), dcomb, a.ye.data(), a.slot.data(), a.gate.data(),
                         a.row_token.data(), a.rows, N, K, Din);
  }
  ex.dispatch_grad_start(layer, a, s, Din);
  // dm starts as the first shared expert's input gradient (the same bits as
  // adding it onto zeros), or as zeros without shared experts.
  if (mw.shared.empty()) bulk_fill(dm, N * D, 0.0f);
  for (size_t sh = 0; sh < mw.shared.size(); ++sh) {
    swiglu_ffn_backward(dm, ctx.gw(mw.shared[sh].w13, 2 * F * D), ctx.gw(mw.shared[sh].w2, D * F), s.dz.data(),
                        s.dh13.data(), dtotal, a.m.data(), a.sh13[sh].data(), a.sz[sh].in(), ctx.p(mw.shared[sh].w13),
                        ctx.p(mw.shared[sh].w2), SwigluFfnDims{N, F, D}, sh == 0 ? 0.0f : 1.0f, ctx.prec);
    ex.progress();
  }
  const ExpertRows er = ex.dispatch_grad_finish(layer, a, s, Din);
  ExpertWeightPointers ew(mw, er, ctx, Pass::kBackward);
  grouped_swiglu_backward(er.dx, ew.dw13.data(), ew.dw2.data(), er.dh, er.dy, er.x, er.h, er.z,
                          ew.group(er, F, Din), ctx.prec);
  ex.combine_grad_start(layer, a, s, Din);
  const RouterDims rd = router_dims(c, N, ctx.T);
  {
    ScopedPhase phase(Phase::kMoeDispatch);
    router_backward(s.dlogits.data(), s.dgate.data(), a.logits.data(), a.scores.data(), a.idx.data(),
                    a.gate.data(), rd, aux_coef, z_coef);
  }
  // Forced-balance logits do not depend on the router: zeros, with the products' cost kept.
  if (c.router_force_balance) std::fill(s.dlogits.begin(), s.dlogits.begin() + N * E, 0.0f);
  linear_backward_weight(ctx.gw(mw.router, E * D), s.dlogits.data(), a.m.data(), N, E, D, MatmulPrecision::kFp32);
  ex.progress();
  ex.combine_grad_finish(layer, a, s, Din);
  if (c.d_latent > 0) {
    bulk_fill(s.dxin.data(), N * Din, 0.0f);
    {
      ScopedPhase phase(Phase::kMoeDispatch);
      moe_gather_backward(s.dxin.data(), s.dxe.data(), a.slot.data(), N, K, Din);
    }
    rmsnorm_backward(s.dmlat.data(), ctx.g(mw.latent_norm), s.dxin.data(), a.mlat.data(),
                     ctx.p(mw.latent_norm), a.rstd_l.data(), N, c.d_latent, 0.0f);
    linear_backward(dm, ctx.gw(mw.down, c.d_latent * D), s.dmlat.data(), a.m.data(), ctx.p(mw.down), N, c.d_latent, D,
                    1.0f, ctx.prec);
  } else {
    {
      ScopedPhase phase(Phase::kMoeDispatch);
      moe_gather_backward(dm, s.dxe.data(), a.slot.data(), N, K, Din);
    }
  }
  linear_backward_input(dm, s.dlogits.data(), ctx.p(mw.router), N, E, D, 1.0f, MatmulPrecision::kFp32);
  rmsnorm_backward(dres, ctx.g(w.ffn_norm), dm, x_mid, ctx.p(w.ffn_norm), a.rstd_m.data(), N, D, 1.0f);
}

ExpertRows IdentityDispatcher::dispatch_finish(int64_t, FfnActs& a, int64_t) {
  ExpertRows r;
  r.first = 0;
  r.count = E_;
  r.begin = a.begin.data();
  r.x = a.xe.data();
  r.y = a.ye.data();
  r.h = a.he.data();
  r.z = a.ze.data();
  return r;
}

ExpertRows IdentityDispatcher::dispatch_grad_finish(int64_t, const FfnActs& a, FfnScratch& s, int64_t) {
  // The saved activations are only read by the backward.
  FfnActs& saved = const_cast<FfnActs&>(a);
  ExpertRows r;
  r.first = 0;
  r.count = E_;
  r.begin = a.begin.data();
  r.x = saved.xe.data();
  r.h = saved.he.data();
  r.z = saved.ze.data();
  r.dy = s.dye.data();
  r.dx = s.dxe.data();
  r.dz = s.dz.data();
  r.dh = s.dh13.data();
  return r;
}

}  // namespace mt
