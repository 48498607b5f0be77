// perf.cpp — see perf.h. Per micro-batch, per layer, on one GPU (t = tp,
// M = micro_batch x seq_len tokens; MoE layers see M / t tokens each):
//   attention: norm, all-gather, QKV GEMM (M, (H + 2Hkv')Dh/t, D), RoPE,
//              fused attention (4 M (H/t) Dh keys FLOPs), output GEMM
//              (M, D, H Dh/t), reduce-scatter, residual add
//   dense FFN: norm, all-gather, gate/up GEMM (M, 2F/t, D), SwiGLU,
//              down GEMM (M, D, F/t), reduce-scatter, residual add
//   MoE FFN:   norm, router GEMM, top-k, permute, all-to-all, grouped expert
//              GEMMs (E/ep experts of M K r ep/(t E) rows), all-to-all,
//              weighted combine, shared experts, latent projections
// Backward: GEMMs twice (input and weight gradients), fused attention 2.5x
// its forward FLOPs (it recomputes the probabilities), element-wise kernels
// twice, the same collectives again.
#include "plan/perf.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "kernels/cpu/gated_delta.h"
#include "kernels/cpu/gemm.h"
#include "model/context_chunks.h"
#include "plan/memory.h"

namespace mt::plan {
namespace {

struct Machine {
  double peak;      // FLOP/s
  double gemm;      // sustained GEMM FLOP/s
  double attn;      // sustained fused-attention FLOP/s
  double hbm;       // sustained bytes/s
  double lat;       // seconds per kernel
  double k0;        // GEMM tile fill/drain, in reduction steps
  double ew;        // element-wise traffic multiplier
  double fp8_gemm;  // sustained FP8 GEMM FLOP/s (0 = none)
  double delta;     // gated-delta recurrence FLOP/s
  bool cpu;         // the CPU trainer: expert GEMMs over the kept rows only (no capacity padding)
  bool measured;    // rates of the cluster file's [cpu] section (attention and delta at their own kernels' rates)
  double grouped = 1.0;  // grouped (expert) GEMMs: time x this over the GEMM rate's (a CPU's measured factor)
};

// `sm_share`: the SMs left to compute kernels (parallel.comm_sms): GEMMs, attention and memory-bound kernels
// all run at that share of their rates; the peak (MFU's denominator) and the per-kernel latency stay.
// A CPU cluster with measured [cpu] figures for the step's precision (the layout's precision.params, the
// trainer's train.precision) uses them instead of the peak x efficiency model.
Machine machine_of(const ClusterConfig& c, double sm_share = 1.0, Precision prec = Precision::kBf16) {
  const double peak = c.device.peak_tflops * 1e12;
  const bool cpu = c.device.kind == DeviceKind::kCpu;
  Machine m{peak,
            peak * c.eff.gemm * sm_share,
            peak * c.eff.attention * sm_share,
            c.device.hbm_tbps * 1e12 * c.eff.hbm * sm_share,
            c.eff.kernel_latency_us * 1e-6,
            c.eff.gemm_k0,
            c.eff.elementwise,
            c.device.peak_fp8_tflops * 1e12 * c.eff.gemm * sm_share,
            peak * c.eff.attention * sm_share,
            cpu,
            false};
  const CpuRates& r = c.cpu.rates(prec == Precision::kBf16);
  if (cpu && r.measured()) {
    m.peak = r.peak_gflops * 1e9;
    m.gemm = r.gemm_gflops * 1e9 * r.gemm_efficiency;
    m.k0 = r.gemm_k0;
    m.attn = r.attention_gflops * 1e9;
    m.delta = r.delta_gflops > 0 ? r.delta_gflops * 1e9 : m.attn;
    m.grouped = r.experts_factor > 0 ? r.experts_factor : 1.0;
    m.fp8_gemm = 0;
    // The CPU trainer's element-wise kernels read and write fp32 activations in both precisions: twice the
    // bytes of the bf16 counts below.
    m.ew = 2.0 * c.eff.elementwise;
    m.measured = true;
  }
  return m;
}

double mem_s(double bytes, const Machine& mc) { return bytes * mc.ew / mc.hbm + mc.lat; }

double gemm_time(double M, double N, double K, const Machine& mc) {
  if (M <= 0 || N <= 0 || K <= 0) return 0.0;
  const double flops = 2.0 * M * N * K;
  const double bytes = 2.0 * (M * K + K * N + M * N);
  return std::max(flops / mc.gemm * (K + mc.k0) / K, bytes / mc.hbm) + mc.lat;
}

// Grouped GEMM over `groups` equal problems: one kernel, each group on the roofline.
double grouped_gemm_time(double groups, double M, double N, double K, const Machine& mc) {
  if (groups <= 0 || M <= 0) return 0.0;
  const double flops = 2.0 * M * N * K;
  const double bytes = 2.0 * (M * K + K * N + M * N);
  return groups * std::max(flops / mc.gemm * (K + mc.k0) / K * mc.grouped, bytes / mc.hbm) + mc.lat;
}

// One layer, one micro-batch, one GPU.
struct LayerCost {
  double fwd = 0, bwd = 0;  // kernel time
  double recompute = 0;     // extra forward kernel time for recomputation
  double gemm = 0;          // GEMM time, forward + backward (the window TP collectives hide behind)
  double tp_comm = 0;       // TP collectives, forward + backward (+ recomputed forward)
  double a2a = 0;           // EP all-to-all, forward + backward (+ recomputed forward)
  double cp_comm = 0;       // ring-attention K/V (and backward dK/dV) transfers, forward + backward (+ recompute)
  double cp_window = 0;     // attention compute the ring hides behind
  double cp_bytes = 0;      // context parallelism's bytes received, forward + backward (+ recompute)
  double hw_flops = 0;      // FLOPs executed, recomputation included
};

LayerCost layer_cost(const ModelConfig& c, int64_t l, const Parallel& p, const Machine& mc, const Links& lk,
                     const GroupSpans& g) {
  LayerCost r;
  // FP8 training (DeepSeek-V3 report, sec. 3.3): the linear layers' GEMMs run on FP8 tensor cores at the
  // same sustained fraction of the FP8 peak; router, LM head and attention stay in bf16. Bytes unchanged.
  Machine lin = mc;
  if (p.cfg.gemm == GemmPrecision::kFp8) lin.gemm = mc.fp8_gemm;
  const double t = double(p.tp), M = double(p.local_tokens()), Mt = M / t;  // context parallelism: 1/cp of the sequence
  const double D = double(c.d_model), H = double(c.n_heads), Dh = double(c.head_dim());
  const double hkv = double(std::max(c.kv_heads(l), p.tp));
  const double act_bytes = 2.0 * M * D;  // one (M, D) bf16 activation
  const bool full = p.cfg.recompute == Recompute::kFull;
  // Module-level recomputation (memory.recompute_modules, "selective"): each module dropped from memory
  // runs its forward again in backward. Full recomputation repeats the whole layer instead (below).
  const RecomputeMask redo = full ? kRecomputeNothing : layout_recompute_mask(p.cfg);
  auto redoes = [redo](ActModule m) { return (redo & RecomputeMask(m)) != 0; };
  double redo_s = 0, redo_flops = 0;  // module recomputation of this layer, one micro-batch

  // ---- attention sub-block
  double fwd_gemm, fwd_mem, attn_flops, proj_flops, gather_bytes = act_bytes;
  const double keys = mean_keys(p.seq_len, c.is_local(l) ? c.window : 0, p.cfg.document_tokens);
  const bool delta = c.is_delta(l);
  if (delta) {
    // Gated delta (model/delta_block.h): W_in (P, D) and W_o split by heads, the chunked recurrence in
    // place of attention (kernels/cpu/gated_delta.h FLOPs; matmul-shaped, so at the attention rate).
    const double Hd = double(c.delta_h()), Dk = double(c.delta_dk()), Dv = double(c.delta_dv());
    const double P = 2 * Hd * Dk + 2 * Hd * Dv + 2 * Hd;
    const int64_t C = std::max<int64_t>(1, std::min(c.delta_chunk, p.seq_len));
    fwd_gemm = gemm_time(M, P / t, D, lin) + gemm_time(M, D, Hd * Dv / t, lin);
    fwd_mem = mem_s(4 * D * Mt, mc) /* norm */ + mem_s(4 * Hd * (2 * Dk + 2 * Dv) * Mt, mc) /* l2 norms, gates */ +
              mem_s(6 * D * Mt, mc) /* residual */;
    if (redoes(ActModule::kNorm)) redo_s += mem_s(4 * D * Mt, mc);
    if (redoes(ActModule::kQkv)) redo_s += gemm_time(M, P / t, D, lin), redo_flops += 2.0 * M * D * P / t;
    attn_flops = M * (Hd / t) * gated_delta_flops_per_token(c.delta_dk(), c.delta_dv(), C);
    proj_flops = 2.0 * M * D * (P + Hd * Dv) / t;
  } else if (!c.mla()) {
    fwd_gemm = gemm_time(M, (H + 2 * hkv) * Dh / t, D, lin) + gemm_time(M, D, H * Dh / t, lin);
    fwd_mem = mem_s(4 * D * Mt, mc) /* norm */ + mem_s(4 * (H + hkv) * Dh * Mt, mc) /* rope */ +
              mem_s(6 * D * Mt, mc) /* residual */;
    if (c.qk_norm) fwd_mem += mem_s(4 * (H + hkv) * Dh * Mt, mc);
    if (redoes(ActModule::kNorm)) redo_s += mem_s(4 * D * Mt, mc);
    if (redoes(ActModule::kQkv)) {  // the QKV GEMM from the kept norm output, RoPE and qk-norm again
      redo_s += gemm_time(M, (H + 2 * hkv) * Dh / t, D, lin) + mem_s(4 * (H + hkv) * Dh * Mt, mc) +
                (c.qk_norm ? mem_s(4 * (H + hkv) * Dh * Mt, mc) : 0.0);
      redo_flops += 2.0 * M * D * (H + 2 * hkv) * Dh / t;
    }
    attn_flops = 4.0 * M * (H / t) * Dh * keys;
    proj_flops = 2.0 * M * D * ((H + 2 * hkv) * Dh + H * Dh) / t;
  } else {
    // MLA (DeepSeek-V2 2.1), training form: the down-projections W_DQ, W_DKV run whole on each rank's
    // sequence-parallel share (M/t tokens), their latents are all-gathered instead of the hidden state,
    // the up-projections and W_O are split by heads like GQA's.
    const double Dq = double(c.q_lora_rank), Dc = double(c.kv_lora_rank), Dr = double(c.qk_rope_head_dim);
    const double Dn = double(c.qk_nope_head_dim), Dv = double(c.v_head_dim), Dqk = Dn + Dr;
    const double q_in = Dq > 0 ? Dq : D;  // W_UQ reads the query latent, W_Q the hidden state
    fwd_gemm = gemm_time(Mt, Dq + Dc + Dr, D, lin) + gemm_time(M, H * Dqk / t, q_in, lin) +
               gemm_time(M, H * (Dn + Dv) / t, Dc, lin) + gemm_time(M, D, H * Dv / t, lin);
    fwd_mem = mem_s(4 * D * Mt, mc) /* norm */ + mem_s(4 * (Dq + Dc) * Mt, mc) /* latent norms */ +
              mem_s(4 * (H + 1) * Dr * Mt, mc) /* rope */ + mem_s(4 * H * Dr * Mt, mc) /* k^R broadcast */ +
              mem_s(6 * D * Mt, mc) /* residual */;
    attn_flops = 2.0 * M * (H / t) * (Dqk + Dv) * keys;
    proj_flops = 2.0 * Mt * D * (Dq + Dc + Dr) + 2.0 * M * (H * Dqk * q_in + H * (Dn + Dv) * Dc + D * H * Dv) / t;
    gather_bytes = 2.0 * M * ((Dq > 0 ? Dq : D) + Dc + Dr);
    if (redoes(ActModule::kNorm)) redo_s += mem_s(4 * D * Mt, mc) + mem_s(4 * (Dq + Dc) * Mt, mc);
    if (redoes(ActModule::kQkv)) {  // DeepSeek-V3 3.2.3: the up-projections from the kept latents, and RoPE
      redo_s += gemm_time(M, H * Dqk / t, q_in, lin) + gemm_time(M, H * (Dn + Dv) / t, Dc, lin) +
                mem_s(4 * (H + 1) * Dr * Mt, mc) + mem_s(4 * H * Dr * Mt, mc);
      redo_flops += 2.0 * M * (H * Dqk * q_in + H * (Dn + Dv) * Dc) / t;
    }
    if (p.cp > 1) {
      // Context parallelism exchanges the latent: each rank decompresses the other ranks' tokens too,
      // once forward and again backward (with W_UKV's two gradient products).
      const double others = M * double(p.cp - 1), up = gemm_time(others, H * (Dn + Dv) / t, Dc, lin);
      fwd_gemm += up;
      r.bwd += up;
      proj_flops += 2.0 * others * H * (Dn + Dv) * Dc / t;
    }
  }
  double attn_fwd, attn_bwd;
  if (mc.measured) {
    // The CPU kernels at their measured rates (forward + backward = 3.5 x the forward FLOPs over the rate,
    // cluster.h CpuRates), split 1 : 2.5 as below.
    const double rate = delta ? mc.delta : mc.attn;
    attn_fwd = attn_flops / rate + mc.lat;
    attn_bwd = 2.5 * attn_flops / rate + mc.lat;
  } else if (p.cfg.flash_attention || delta) {
    // Flash attention runs at its kernel's rate for the key span of one call (attention_rate.h); the
    // gated-delta recurrence at the device's flat attention rate.
    // Under ring context parallelism a causal global layer's cp steps are one masked diagonal block and
    // cp - 1 unmasked ones (sliding-window layers exchange halos and stay masked).
    const bool ring = p.cp > 1 && !c.is_local(l) && p.cfg.document_tokens <= 0;
    const double span = attention_span(double(p.seq_len), double(p.cp), double(c.is_local(l) ? c.window : 0),
                                       double(p.cfg.document_tokens));
    const double rate = delta ? mc.attn
                              : mc.attn * (ring ? ring_attention_rate_factor(p.cfg.attention_kernel, span, double(p.cp))
                                                : attention_rate_factor(p.cfg.attention_kernel, span));
    attn_fwd = attn_flops / rate + mc.lat;
    attn_bwd = 2.5 * attn_flops / rate + mc.lat;
  } else {  // two batched GEMMs plus a softmax over the materialised probabilities
    const double probs = M * (H / t) * keys;
    attn_fwd = attn_flops / mc.gemm + mem_s(8 * probs, mc) + 2 * mc.lat;
    attn_bwd = 2 * attn_flops / mc.gemm + mem_s(16 * probs, mc) + 4 * mc.lat;
  }
  double tp_fwd = 0;
  if (p.tp > 1) tp_fwd += all_gather_s(gather_bytes, g.tp, lk) + reduce_scatter_s(act_bytes, g.tp, lk);
  r.fwd += fwd_gemm + fwd_mem + attn_fwd;
  r.bwd += 2 * fwd_gemm + 2 * fwd_mem + attn_bwd;
  r.gemm += 3 * fwd_gemm;
  r.tp_comm += 2 * tp_fwd;
  r.hw_flops += 3 * proj_flops + 3.5 * attn_flops;
  double layer_fwd = fwd_gemm + fwd_mem + attn_fwd, layer_tp_fwd = tp_fwd, layer_a2a_fwd = 0;
  double layer_fwd_flops = proj_flops + attn_flops;
  // Context parallelism (ring attention, Megatron-Core / Llama 3): each rank's queries meet the whole
  // sequence's keys, so with load-balanced chunks the attention FLOPs above (local queries x mean keys of
  // the full sequence) are 1/cp of the total. K/V blocks go round the ring in cp - 1 steps forward; the
  // backward sends K/V and their gradients (twice the bytes). Step i+1's transfer hides behind step i's
  // attention, so all but one step's share of the attention time is the window.
  double layer_cp_fwd = 0, layer_cp_bytes_fwd = 0;
  const int64_t w = c.is_local(l) ? c.window : 0;
  if (p.cp > 1 && !delta &&
      (w <= 0 || w >= p.seq_len)) {  // a D layer passes one state per head along the ring instead: not modelled
    const double bytes = cp_kv_bytes(c, p), step = p2p_s(bytes, g.cp_same_domain, lk), steps = double(p.cp - 1);
    layer_cp_fwd = steps * step;
    layer_cp_bytes_fwd = steps * bytes;
    r.cp_comm += layer_cp_fwd + 2 * steps * step;
    r.cp_bytes += 3 * steps * bytes;
    r.cp_window += (attn_fwd + attn_bwd) * steps / double(p.cp);
  } else if (p.cp > 1 && !delta && w > 1) {
    // Sliding window: only the window - 1 rows before a chunk, from the chunk before's owner, one
    // transfer forward (K, V) and one back (their gradients) besides the backward's K, V again.
    const double bytes = cp_halo_bytes(c, p, w), step = p2p_s(bytes, g.cp_same_domain, lk);
    layer_cp_fwd = step;
    layer_cp_bytes_fwd = bytes;
    r.cp_comm += 3 * step;
    r.cp_bytes += 3 * bytes;
  }
  if (redoes(ActModule::kCoreAttn)) redo_s += attn_fwd, redo_flops += attn_flops;

  // ---- FFN sub-block
  if (!c.is_moe(l)) {
    const double F = double(c.d_ff);
    const double gm = gemm_time(M, 2 * F / t, D, lin) + gemm_time(M, D, F / t, lin);
    const double mm = mem_s(4 * D * Mt, mc) + mem_s(6 * F * Mt, mc) + mem_s(6 * D * Mt, mc);
    const double tp = p.tp > 1 ? all_gather_s(act_bytes, g.tp, lk) + reduce_scatter_s(act_bytes, g.tp, lk) : 0.0;
    if (redoes(ActModule::kNorm)) redo_s += mem_s(4 * D * Mt, mc);
    if (redoes(ActModule::kSwiglu)) redo_s += mem_s(6 * F * Mt, mc);
    r.fwd += gm + mm;
    r.bwd += 2 * gm + 2 * mm;
    r.gemm += 3 * gm;
    r.tp_comm += 2 * tp;
    r.hw_flops += 3 * 2.0 * M * 3 * F * D / t;
    layer_fwd += gm + mm;
    layer_tp_fwd += tp;
    layer_fwd_flops += 2.0 * M * 3 * F * D / t;
  } else {
    const double E = double(c.n_experts), F = double(c.d_expert);
    const double Din = double(c.expert_in_dim()), ep = double(p.ep);
    double rows_per_tok = double(c.top_k) * p.cfg.expert_imbalance;
    // The CPU trainer's grouped experts run on the rows routed and kept (moe_block.cpp), not on padded
    // capacity slots; `moetrain bench` routes evenly, so nearly none are dropped.
    if (c.capacity_factor > 0 && !mc.cpu) {
      const int64_t grp = c.group_size(p.seq_len);
      rows_per_tok = double(c.capacity(grp) * c.n_experts) / double(grp);
    }
    const double rows = Mt * rows_per_tok;       // expert rows this GPU computes
    const double rows_e = rows * ep / E;        // per local expert
    double gm = gemm_time(Mt, E, D, mc);        // router
    gm += grouped_gemm_time(E / ep, rows_e, 2 * F, Din, lin) + grouped_gemm_time(E / ep, rows_e, Din, F, lin);
    double flops = 2.0 * Mt * E * D + 2.0 * rows * 3 * F * Din;
    if (c.n_shared_experts > 0) {
      const double S = double(c.n_shared_experts);
      gm += gemm_time(Mt, 2 * F * S, D, lin) + gemm_time(Mt, D, F * S, lin);
      flops += 2.0 * Mt * 3 * F * D * S;
    }
    if (c.d_latent > 0) {
      const double Dl = double(c.d_latent);
      gm += gemm_time(Mt, Dl, D, lin) + gemm_time(Mt, D, Dl, lin);
      flops += 2.0 * Mt * 2 * Dl * D;
    }
    double mm = mem_s(4 * D * Mt, mc) /* norm */ + mem_s(12 * E * Mt, mc) /* softmax, top-k */ +
                mem_s(2 * D * Mt + 2 * Din * rows, mc) /* permute */ + mem_s(6 * F * rows, mc) /* SwiGLU */ +
                mem_s(2 * Din * rows + 2 * D * Mt, mc) /* combine */ + mem_s(6 * D * Mt, mc) /* residual */;
    if (c.d_latent > 0) mm += mem_s(4 * double(c.d_latent) * Mt, mc);
    if (c.moe_out_norm) mm += mem_s(4 * D * Mt, mc);
    if (redoes(ActModule::kNorm))
      redo_s += mem_s(4 * D * Mt, mc) + (c.d_latent > 0 ? mem_s(4 * double(c.d_latent) * Mt, mc) : 0.0);
    if (redoes(ActModule::kExperts)) {  // routed experts' hidden units: gate/up GEMMs and SwiGLU
      redo_s += grouped_gemm_time(E / ep, rows_e, 2 * F, Din, lin) + mem_s(6 * F * rows, mc);
      redo_flops += 2.0 * rows * 2 * F * Din;
    } else if (redoes(ActModule::kSwiglu)) {
      redo_s += mem_s(6 * F * rows, mc);
    }
    if (c.n_shared_experts > 0) {
      const double S = double(c.n_shared_experts);
      if (redoes(ActModule::kSharedExperts)) {
        redo_s += gemm_time(Mt, 2 * F * S, D, lin) + mem_s(6 * F * S * Mt, mc);
        redo_flops += 2.0 * Mt * 2 * F * S * D;
      } else if (redoes(ActModule::kSwiglu)) {
        redo_s += mem_s(6 * F * S * Mt, mc);
      }
    }
    // Dispatch + combine; with group-limited routing each token crosses the scale-out network once per
    // destination domain (DeepSeek-V3 3.2.2).
    double a2a = 0;
    if (p.ep > 1 && c.max_groups_per_token > 0)
      a2a = 2 * all_to_all_node_limited_s(2.0 * rows * Din, double(c.top_k), ep_domains_per_token(c, g.ep), g.ep, lk);
    else if (p.ep > 1)
      a2a = 2 * all_to_all_s(2.0 * rows * Din, g.ep, lk);
    r.fwd += gm + mm;
    r.bwd += 2 * gm + 2 * mm;
    r.gemm += 3 * gm;
    r.a2a += 2 * a2a;
    r.hw_flops += 3 * flops;
    layer_fwd += gm + mm;
    layer_a2a_fwd += a2a;
    layer_fwd_flops += flops;
  }
  r.recompute += redo_s;
  r.hw_flops += redo_flops;
  if (full) {
    r.recompute += layer_fwd;
    r.tp_comm += layer_tp_fwd;
    r.cp_comm += layer_cp_fwd;
    r.cp_bytes += layer_cp_bytes_fwd;
    r.a2a += layer_a2a_fwd;
    r.hw_flops += layer_fwd_flops;
  }
  return r;
}

struct StageCost {
  double fwd = 0, bwd = 0, recompute = 0, tp_comm = 0, tp_exposed = 0, a2a = 0, a2a_exposed = 0;
  double cp_comm = 0, cp_exposed = 0, cp_bytes = 0;
  double hw_flops = 0;
  double wgrad = 0;  // the weight-gradient GEMMs of the backward (zero-bubble schedules defer them)
  double per_mb() const { return fwd + bwd + recompute + tp_exposed + a2a_exposed + cp_exposed; }
  // The mean of two stages: a DualPipe rank runs half its micro-batches through each of its two stages.
  static StageCost mean(const StageCost& a, const StageCost& b) {
    auto avg = [](double x, double y) { return (x + y) / 2; };
    StageCost r;
    r.fwd = avg(a.fwd, b.fwd), r.bwd = avg(a.bwd, b.bwd), r.recompute = avg(a.recompute, b.recompute);
    r.tp_comm = avg(a.tp_comm, b.tp_comm), r.tp_exposed = avg(a.tp_exposed, b.tp_exposed);
    r.a2a = avg(a.a2a, b.a2a), r.a2a_exposed = avg(a.a2a_exposed, b.a2a_exposed);
    r.cp_comm = avg(a.cp_comm, b.cp_comm), r.cp_exposed = avg(a.cp_exposed, b.cp_exposed);
    r.cp_bytes = avg(a.cp_bytes, b.cp_bytes), r.hw_flops = avg(a.hw_flops, b.hw_flops), r.wgrad = avg(a.wgrad, b.wgrad);
    return r;
  }
};

StageCost stage_cost(const ModelConfig& c, const Parallel& p, int64_t stage, const Machine& mc, const Links& lk,
                     const GroupSpans& g, double ov, double ep_ov) {
  StageCost sc;
  auto [first, count] = stage_layers(p, c.n_layers, stage);
  double gemm = 0, moe_compute = 0, cp_window = 0;
  auto add = [&](int64_t l) {
    const LayerCost lc = layer_cost(c, l, p, mc, lk, g);
    sc.cp_comm += lc.cp_comm;
    sc.cp_bytes += lc.cp_bytes;
    cp_window += lc.cp_window;
    sc.fwd += lc.fwd;
    sc.bwd += lc.bwd;
    sc.recompute += lc.recompute;
    sc.tp_comm += lc.tp_comm;
    sc.a2a += lc.a2a;
    sc.hw_flops += lc.hw_flops;
    gemm += lc.gemm;
    if (c.is_moe(l)) moe_compute += lc.fwd + lc.bwd + lc.recompute;
  };
  for (int64_t l = first; l < first + count; ++l) add(l);
  const double t = double(p.tp), M = double(p.local_tokens()), D = double(c.d_model);
  if (stage == p.pp - 1 && c.mtp_depth > 0) {
    // Multi-token prediction (DeepSeek-V3 2.2) on the last stage: per module two RMSNorms, the (D, 2D)
    // projection and a block like the last layer; its head pass is counted with the LM head below.
    for (int64_t d = 0; d < c.mtp_depth; ++d) {
      add(c.n_layers - 1);
      Machine lin = mc;
      if (p.cfg.gemm == GemmPrecision::kFp8) lin.gemm = mc.fp8_gemm;
      const double gm = gemm_time(M, D / t, 2 * D, lin);
      sc.fwd += gm + mem_s(8 * D * M / t, mc);
      sc.bwd += 2 * gm + mem_s(16 * D * M / t, mc);
      gemm += 3 * gm;
      sc.hw_flops += 3 * 2.0 * M * 2 * D * D / t;
    }
  }
  if (stage == 0) {  // embedding gather and its scatter-add gradient
    sc.fwd += mem_s(4 * D * M / t, mc);
    sc.bwd += mem_s(8 * D * M / t, mc);
  }
  if (stage == p.pp - 1) {  // final norm, LM head GEMM, fused cross-entropy on fp32 logits (again per MTP module)
    const double V = double(c.vocab_size), heads = double(1 + c.mtp_depth);
    const double gm = gemm_time(M, V / t, D, mc);
    sc.fwd += heads * (gm + mem_s(4 * D * M / t, mc) + mem_s(8 * V * M / t, mc));
    sc.bwd += heads * (2 * gm + mem_s(8 * D * M / t, mc) + mem_s(8 * V * M / t, mc));
    gemm += heads * 3 * gm;
    sc.hw_flops += heads * 3 * 2.0 * M * V * D / t;
    if (p.tp > 1) sc.tp_comm += heads * 2 * all_gather_s(2.0 * M * D, g.tp, lk);
  }
  sc.wgrad = gemm / 3;  // every GEMM runs forward, input gradient and weight gradient at the same cost
  sc.tp_exposed = p.cfg.tp_overlap ? exposed_s(sc.tp_comm, gemm, ov) : sc.tp_comm;
  sc.a2a_exposed = exposed_s(sc.a2a, moe_compute, ep_ov);
  sc.cp_exposed = exposed_s(sc.cp_comm, cp_window, ov);
  return sc;
}

}  // namespace

Links links_of(const ClusterConfig& c) {
  return {c.device.nvlink_gbps / 2.0 * 1e9 * c.eff.link, c.scaleout_gbps * 1e9 * c.eff.link,
          c.eff.kernel_latency_us * 1e-6};
}

double reduce_scatter_s(double bytes, GroupSpan g, const Links& l) {
  if (g.n <= 1 || bytes <= 0) return 0.0;
  const double n = double(g.n), m = double(std::clamp<int64_t>(g.m, 1, g.n)), k = n / m;
  if (k <= 1.0) return bytes * (n - 1) / n / l.nvlink_Bps + l.latency_s;
  if (m <= 1.0) return bytes * (n - 1) / n / l.scaleout_Bps + l.latency_s;
  // Hierarchical: inside the domain over NVLink, then 1/m of the data across domains.
  return bytes * (m - 1) / m / l.nvlink_Bps + bytes / m * (k - 1) / k / l.scaleout_Bps + 2 * l.latency_s;
}

double all_gather_s(double bytes, GroupSpan g, const Links& l) { return reduce_scatter_s(bytes, g, l); }

double all_reduce_s(double bytes, GroupSpan g, const Links& l) { return 2.0 * reduce_scatter_s(bytes, g, l); }

double all_to_all_s(double bytes, GroupSpan g, const Links& l) {
  if (g.n <= 1 || bytes <= 0) return 0.0;
  const double n = double(g.n), m = double(std::clamp<int64_t>(g.m, 1, g.n));
  const double intra = bytes * (m - 1) / n, inter = bytes * (n - m) / n;
  return std::max(intra > 0 ? intra / l.nvlink_Bps : 0.0, inter > 0 ? inter / l.scaleout_Bps : 0.0) + l.latency_s;
}

double all_to_all_node_limited_s(double bytes, double k, double domains, GroupSpan g, const Links& l) {
  if (g.n <= 1 || bytes <= 0) return 0.0;
  const double n = double(g.n), m = double(std::clamp<int64_t>(g.m, 1, g.n)), N = n / m;
  if (N <= 1.0) return all_to_all_s(bytes, g, l);
  const double remote = (N - 1) / N;
  const double inter = bytes * std::min(domains, k) / k * remote;
  const double intra = bytes * (m - 1) / n + bytes * remote * (m - 1) / m;
  return std::max(intra / l.nvlink_Bps, inter / l.scaleout_Bps) + 2 * l.latency_s;
}

double ep_domains_per_token(const ModelConfig& c, GroupSpan ep) {
  const double K = double(c.top_k);
  if (c.max_groups_per_token <= 0 || c.expert_groups <= 0) return K;
  const double m = double(std::clamp<int64_t>(ep.m, 1, ep.n)), n = double(ep.n);
  const double domains = std::ceil(n / m);
  // Groups are contiguous, as the experts over the EP ranks: one spans n / G ranks.
  const double per_group = std::max(1.0, std::ceil(n / (double(c.expert_groups) * m)));
  return std::min({K, domains, double(c.max_groups_per_token) * per_group});
}

double p2p_s(double bytes, bool same_domain, const Links& l) {
  if (bytes <= 0) return 0.0;
  return bytes / (same_domain ? l.nvlink_Bps : l.scaleout_Bps) + l.latency_s;
}

GroupSpans group_spans(const Parallel& p, int64_t dom) {
  GroupSpans g;
  auto per_domain = [dom](int64_t n, int64_t stride) {
    return std::clamp<int64_t>(dom / std::max<int64_t>(stride, 1), 1, n);
  };
  g.tp = {p.tp, std::min(p.tp, dom)};
  g.ep = {p.ep, std::min(p.ep, dom)};
  g.cp = {p.cp, per_domain(p.cp, p.tp)};
  g.cp_same_domain = p.tp * p.cp <= dom;
  // Gradients are reduced over every replica of the weights: the dp x cp ranks after tp.
  g.dp = {p.grad_replicas(), per_domain(p.grad_replicas(), p.tp)};
  g.edp = {p.edp, per_domain(p.edp, p.ep)};
  g.pp = {p.pp, per_domain(p.pp, p.tp * p.cp * p.dp)};
  g.pp_same_domain = p.tp * p.cp * p.dp < dom;
  return g;
}

double exposed_s(double comm, double window, double ov) {
  const double hideable = std::max(0.0, ov * window);
  return std::max(0.0, comm - hideable) + (1.0 - ov) * std::min(comm, hideable);
}

double gemm_s(double M, double N, double K, const ClusterConfig& c) { return gemm_time(M, N, K, machine_of(c)); }

StepTime step_time(const ModelConfig& c, const ModelStats& s, const Parallel& p, const ClusterConfig& cl) {
  StepTime st;
  const Machine mc = machine_of(cl, compute_sm_share(p.cfg, cl.device), p.cfg.params);
  const Links lk = links_of(cl);
  const GroupSpans g = group_spans(p, cl.device.gpus_per_domain);
  const double ov = cl.eff.overlap, ep_ov = p.cfg.ep_overlap * cl.eff.overlap;
  const double m = double(p.microbatches);

  // Pipeline stages: the busiest rank sets the steady-state pace, the mean stage sizes the bubble. A rank
  // holds one stage, except under DualPipe (DeepSeek-V3 report, 2024): rank i runs stage i of one direction
  // and stage p-1-i of the other, half of the micro-batches through each, so its pace is the pair's mean.
  std::vector<StageCost> stages;
  double mean_mb = 0, mean_bwd = 0, mean_w = 0, hw_flops = 0;
  for (int64_t i = 0; i < p.pp; ++i) {
    stages.push_back(stage_cost(c, p, i, mc, lk, g, ov, ep_ov));
    const StageCost& sc = stages.back();
    mean_mb += sc.per_mb() / double(p.pp);
    mean_bwd += (sc.bwd + sc.recompute) / double(p.pp);
    mean_w += sc.wgrad / double(p.pp);
    hw_flops += sc.hw_flops * m * double(p.tp);  // the stage's tp GPUs of one pipeline; x dp below
  }
  const bool dual = p.cfg.schedule == PipeSchedule::kDualPipe && p.pp > 1;
  StageCost worst;
  for (int64_t i = 0; i < p.pp; ++i) {
    const StageCost rank = dual ? StageCost::mean(stages[i], stages[p.pp - 1 - i]) : stages[i];
    if (i == 0 || rank.per_mb() > worst.per_mb()) worst = rank;
  }
  st.mean_stage_s = mean_mb, st.mean_stage_bwd_s = mean_bwd, st.mean_stage_wgrad_s = mean_w;
  st.stage_fwd_s = worst.fwd;
  st.stage_bwd_s = worst.bwd;
  st.compute_s = m * (worst.fwd + worst.bwd);
  st.recompute_s = m * worst.recompute;
  st.tp_comm_s = m * worst.tp_comm;
  st.tp_exposed_s = m * worst.tp_exposed;
  st.ep_comm_s = m * worst.a2a;
  st.ep_exposed_s = m * worst.a2a_exposed;
  st.cp_comm_s = m * worst.cp_comm;
  st.cp_exposed_s = m * worst.cp_exposed;
  st.cp_bytes = m * worst.cp_bytes;
  if (cl.device.kind == DeviceKind::kCpu && p.cp > 1) {
    // The CPU trainer's exchange exactly (dist/context_parallel.h): all-gathers and halos of fp32 K, V
    // (bf16 when the step's GEMMs read bf16 and no qk-norm keeps them fp32), fp32 gradients; rank 0's.
    const mt::MatmulPrecision prec =
        p.cfg.params == Precision::kBf16 ? mt::MatmulPrecision::kBf16 : mt::MatmulPrecision::kFp32;
    const bool bf16 = mt::operand_form(prec) == mt::OperandForm::kBf16;  // MLA's latent: a GEMM input, always
    const int64_t kv = bf16 && (c.mla() || !c.qk_norm) ? 2 : 4;
    st.cp_bytes = m * double(context_micro_batch_bytes(c, p.micro_batch, p.seq_len,
                                                       ContextShape{p.cp, 0, kv, p.cfg.recompute == Recompute::kFull}));
  }
  // Bubbles in the terms of the DeepSeek-V3 report's Table 2, from the mean stage's times per micro-batch:
  // F forward, B the whole backward (input and weight gradients, recomputation), W its weight-gradient
  // GEMMs, F + B the whole micro-batch with its exposed communication (mean_mb).
  const double pp = double(p.pp);
  switch (p.cfg.schedule) {
    case PipeSchedule::kGpipe:
    case PipeSchedule::k1F1B:
      st.bubble_s = (pp - 1) * mean_mb;
      break;
    case PipeSchedule::kInterleaved:
      st.bubble_s = (pp - 1) / double(p.v) * mean_mb;
      break;
    // ZB-H1 (Qi et al. 2023): weight gradients fill the cool-down, (p - 1)(F + B - 2W).
    case PipeSchedule::kZeroBubble:
      st.bubble_s = (pp - 1) * std::max(0.0, mean_mb - 2 * mean_w);
      break;
    // DualPipe: (p/2 - 1)(F&B + B - 3W), F&B a forward and a backward chunk run together (their sum; the
    // communication they hide from each other is comm.ep_overlap's).
    case PipeSchedule::kDualPipe:
      st.bubble_s = std::max(0.0, pp / 2 - 1) * std::max(0.0, mean_mb + mean_bwd - 3 * mean_w);
      break;
  }
  if (p.pp > 1) {
    const double bytes = 2.0 * double(p.local_tokens() * c.d_model) / double(p.tp);
    const double t1 = p2p_s(bytes, g.pp_same_domain, lk);
    st.pp_p2p_exposed_s = 2 * (pp - 1) * t1 + m * 2 * t1 * (1 - ov);
  }

  // Data parallelism, on the stage with the most parameters.
  StageParams sp;
  for (int64_t i = 0; i < p.pp; ++i) {
    const StageParams x = stage_params(c, s, p, i);
    if (x.dense + x.experts > sp.dense + sp.experts) sp = x;
  }
  const double wbytes = p.cfg.params == Precision::kBf16 ? 2.0 : 4.0;
  const double gbytes = p.cfg.grads == Precision::kBf16 ? 2.0 : 4.0;
  const double fwd_win = worst.fwd, bwd_win = worst.bwd + worst.recompute;
  // Gradients are final only after the last micro-batch's backward, so that is the window. With the
  // interleaved schedule a stage's later model chunks finish their backward passes during the cool-down
  // and their reduction hides there; only the first chunk's share (1/v) waits for the final backward
  // (likewise the first chunk's parameter gather at the start of the next step).
  const double tail_share = p.cfg.schedule == PipeSchedule::kInterleaved ? 1.0 / double(p.v) : 1.0;
  auto hide = [&](double comm, double window) {
    return p.cfg.dp_overlap ? exposed_s(comm * tail_share, window, ov) + (1 - ov) * comm * (1 - tail_share)
                            : comm;
  };
  if (p.cfg.zero_stage == 0) {
    const double ar = all_reduce_s(gbytes * sp.dense, g.dp, lk) + all_reduce_s(gbytes * sp.experts, g.edp, lk);
    st.dp_comm_s = ar;
    st.dp_exposed_s = hide(ar, bwd_win);
  } else if (p.cfg.zero_stage <= 2 && !gradients_sharded(p.cfg)) {
    const double rs = reduce_scatter_s(gbytes * sp.dense, g.dp, lk) + reduce_scatter_s(gbytes * sp.experts, g.edp, lk);
    const double ag = all_gather_s(wbytes * sp.dense, g.dp, lk) + all_gather_s(wbytes * sp.experts, g.edp, lk);
    st.dp_comm_s = rs + ag;
    st.dp_exposed_s = hide(rs, bwd_win) + hide(ag, fwd_win);
  } else if (p.cfg.zero_stage == 2) {
    // ZeRO-2 with sharded gradients: a rank keeps only its shard, so each micro-batch's gradients are
    // reduce-scattered into it behind that micro-batch's backward; the updated weights are gathered once.
    const double rs = reduce_scatter_s(gbytes * sp.dense, g.dp, lk) + reduce_scatter_s(gbytes * sp.experts, g.edp, lk);
    const double ag = all_gather_s(wbytes * sp.dense, g.dp, lk) + all_gather_s(wbytes * sp.experts, g.edp, lk);
    st.dp_comm_s = m * rs + ag;
    st.dp_exposed_s = m * hide(rs, bwd_win) + hide(ag, fwd_win);
  } else {  // FSDP: gather for forward and again for backward (unless kept), reduce-scatter every micro-batch
    const double ag = all_gather_s(wbytes * sp.dense, g.dp, lk) + all_gather_s(wbytes * sp.experts, g.edp, lk);
    const double rs = reduce_scatter_s(gbytes * sp.dense, g.dp, lk) + reduce_scatter_s(gbytes * sp.experts, g.edp, lk);
    const double bwd_ag = p.cfg.reshard_after_forward ? ag : 0.0;
    st.dp_comm_s = m * (ag + bwd_ag + rs);
    st.dp_exposed_s = m * (hide(ag, fwd_win) + hide(bwd_ag + rs, bwd_win));
  }

  // Optimizer update on this GPU's shard: memory-bound (AdamW reads gradient, m, v, master; writes m, v,
  // master, weights); Muon adds ~30 d_model FLOPs per parameter of Newton–Schulz iterations.
  const double shard = p.cfg.zero_stage >= 1 ? sp.dense / double(p.grad_replicas()) + sp.experts / double(p.edp)
                                             : sp.dense + sp.experts;
  const bool master = p.cfg.params == Precision::kBf16;
  const double mbytes = p.cfg.moments == Precision::kBf16 ? 2.0 : 4.0;  // each of m, v, read and written
  const double per_param = gbytes + 4.0 * mbytes + (master ? 8.0 + wbytes : 8.0);
  // Offload: the update runs on the host CPUs, memory-bound, every GPU of the node sharing its host memory
  // bandwidth (ZeRO-Offload's CPU Adam); gradients go down and weights come back over the host link. From
  // NVMe, master weights and moments are also read and written back through host memory (ZeRO-Infinity).
  const double host_update_s = per_param * shard * double(cl.device.gpus_per_node) / (cl.host_memory_gbps * 1e9);
  const double state_bytes = (master ? 4.0 : 0.0) + 2.0 * mbytes;
  if (p.cfg.offload == Offload::kOptimizer) {
    st.optimizer_s = (gbytes + wbytes) * shard / (cl.host_link_gbps * 1e9) + host_update_s + mc.lat;
  } else if (p.cfg.offload == Offload::kParams) {
    // Weight streaming: each micro-batch fetches the GPU's share of every weight for forward and again for
    // backward and sends its gradients back; with prefetch the transfers hide behind the micro-batch's
    // compute (exposed_s), without it they are serial. The ZeRO-3 gather among GPUs is the dp term above.
    const double held = p.cfg.zero_stage >= 3 ? shard : sp.dense + sp.experts;
    const double gheld = gradients_sharded(p.cfg) ? shard : sp.dense + sp.experts;
    const bool nvme = p.cfg.offload_tier == OffloadTier::kNvme;
    const double bw = std::min(cl.host_link_gbps, nvme ? cl.nvme_gbps / double(cl.device.gpus_per_node)
                                                        : cl.host_link_gbps) * 1e9;
    const double per_mb = (2.0 * wbytes * held + gbytes * gheld) / bw;
    const double window = worst.fwd + worst.bwd + worst.recompute;
    st.stream_s = m * per_mb;
    st.stream_exposed_s = m * (p.cfg.prefetch_layers > 0 ? exposed_s(per_mb, window, ov) : per_mb);
    st.optimizer_s = host_update_s + mc.lat;
    if (nvme) st.optimizer_s += 2.0 * state_bytes * shard * double(cl.device.gpus_per_node) / (cl.nvme_gbps * 1e9);
  } else {
    // Fused multi-tensor kernels: plain streaming, no element-wise traffic multiplier. The CPU trainer also
    // zeroes the gradients it has read (one more write).
    const double zero = mc.cpu ? gbytes : 0.0;
    st.optimizer_s = (per_param + gbytes /* gradient norm */ + zero) * shard / mc.hbm + 2 * mc.lat;
    if (p.cfg.optimizer == OptimizerKind::kMuon) st.optimizer_s += 30.0 * double(c.d_model) * shard / mc.gemm;
  }

  st.step_s = st.compute_s + st.recompute_s + st.tp_exposed_s + st.ep_exposed_s + st.cp_exposed_s + st.bubble_s +
              st.pp_p2p_exposed_s + st.dp_exposed_s + st.optimizer_s + st.stream_exposed_s;
  const double tokens = double(p.tokens_per_step());
  st.model_flops_per_step = s.train_flops_per_token * tokens;
  st.tokens_per_s = tokens / st.step_s;
  const double peak_all = mc.peak * double(p.gpus);
  st.mfu = st.model_flops_per_step / (st.step_s * peak_all);
  st.mfu_full_square = st.mfu * full_square_ratio(s);
  // Hardware FLOPs: every stage's executed FLOPs, for all micro-batches, over dp x tp copies.
  st.hfu = hw_flops * double(p.grad_replicas()) / (st.step_s * peak_all);
  return st;
}

std::vector<TermSource> step_time_sources(const ClusterConfig& cl, const LayoutConfig& l) {
  const EfficiencyModel& e = cl.eff;
  const double peak = cl.device.peak_tflops;
  // Which constants are the built-in calibrated ones (docs/planner.md, "Efficiency model and calibration").
  const EfficiencyModel hopper;
  const bool fitted = cl.device.kind == DeviceKind::kGpu && e.gemm == hopper.gemm && e.elementwise == hopper.elementwise;
  const DeviceSpec* preset = find_device(cl.device.type);
  const bool generation = !fitted && preset && preset->eff.gemm != hopper.gemm && e.gemm == preset->eff.gemm;
  const std::string gemm_src =
      fitted ? "fitted to the Megatron-LM H100 table (leave-one-out error in docs/planner.md)"
      : generation && preset->type == "A100" ? "the H100 fit x the A100/H100 ratio of llm-foundry's MPT tables "
                                               "(docs/reference-tables/generations.md)"
      : generation ? "the H100 fit x this generation's ratio on the Megatron-Bridge Llama 3 8B table "
                     "(docs/reference-tables/generations.md)"
                   : "preset or cluster file, not fitted";
  std::vector<TermSource> v;
  const bool bf16 = l.params == Precision::kBf16;
  const CpuRates& r = cl.cpu.rates(bf16);
  if (cl.device.kind == DeviceKind::kCpu && r.measured()) {
    v.push_back({"compute", fmt::format("measured on this CPU ({}, [cpu], moetrain doctor --write-cluster), {}: "
                                        "GEMMs at {:.1f} GFLOP/s (2048^3) x {:.3f} x K/(K+{:.0f}), fitted to "
                                        "model-shaped products, the routed experts' grouped products x {:.3f} "
                                        "(measured); attention at {:.1f} and gated delta at {:.1f} "
                                        "GFLOP/s (3.5x the forward FLOPs per forward + backward); element-wise "
                                        "kernels at {:.1f} GB/s (the AdamW kernel's stream) on fp32 activations; "
                                        "{:.1f} us per kernel (a 16^3 product)",
                                        cl.source, bf16 ? "bf16" : "fp32", r.gemm_gflops, r.gemm_efficiency, r.gemm_k0,
                                        r.experts_factor > 0 ? r.experts_factor : 1.0, r.attention_gflops,
                                        r.delta_gflops > 0 ? r.delta_gflops : r.attention_gflops,
                                        1e3 * cl.device.hbm_tbps * e.hbm, e.kernel_latency_us)});
  } else {
    v.push_back(
        {"compute",
         fmt::format(
             "roofline per kernel: GEMMs at {:.0f} TFLOP/s x gemm {:.3f} ({}) x K/(K+{:.0f}) "
             "(gemm_k0, assumption: tile pipeline fill), or bytes at {:.2f} TB/s x hbm {:.2f} "
             "(assumption); fused attention ({}) at attention {:.3f} of peak (FlashAttention-2's causal "
             "plateau, FlashAttention-3 paper) x the kernel's rate at the call's key span (seq / cp, "
             "window, document; docs/reference-tables/attention.md); element-wise kernels at {:.2f}x the minimal "
             "traffic ({}); "
             "{:.0f} us per kernel (assumption)",
             peak, e.gemm, gemm_src, e.gemm_k0, cl.device.hbm_tbps, e.hbm, to_string(l.attention_kernel), e.attention,
             e.elementwise, fitted ? "fitted" : "preset or cluster file", e.kernel_latency_us) +
             (l.comm_sms > 0 ? fmt::format("; every rate but the latency x {}/{}: {} of the {} SMs run communication "
                                           "kernels (parallel.comm_sms, layout input)",
                                           cl.device.sms - l.comm_sms, cl.device.sms, l.comm_sms, cl.device.sms)
                             : "")});
  }
  v.push_back({"recompute", fmt::format("the recomputed forward kernels of memory.recompute = {}, same roofline",
                                        to_string(l.recompute))});
  const std::string links =
      fmt::format("NVLink {:.0f} GB/s per direction and scale-out {:.0f} GB/s per GPU (hardware.md), at link {:.2f} "
                  "(assumption: NCCL bus bandwidth ~80% of nominal)",
                  cl.device.nvlink_gbps / 2, cl.scaleout_gbps, e.link);
  const std::string hide = fmt::format("; hidden at overlap {:.2f} (assumption), hidden time still costs {:.0f}%",
                                       e.overlap, 100 * (1 - e.overlap));
  v.push_back({"tp_comm", "sequence-parallel all-gather + reduce-scatter of (tokens x D) bf16 per sub-block, " + links +
                              (l.tp_overlap ? hide + " behind the layer's GEMMs" : "; not overlapped")});
  v.push_back({"ep_comm", "all-to-all dispatch + combine of the expert rows, " + links +
                              fmt::format("; comm.ep_overlap {:.2f} of it hidden (layout input)", l.ep_overlap)});
  v.push_back({"cp_comm", "ring attention (Megatron-Core / Llama 3): cp - 1 point-to-point K/V steps per layer "
                          "forward, K/V and their gradients backward, " + links +
                              hide + " behind the attention of the previous chunk"});
  v.push_back({"dp_comm", "ring reduce-scatter / all-gather of gradients and weights by ZeRO stage (hierarchical "
                          "across NVLink domains), " + links +
                              (l.dp_overlap ? hide + " behind the last backward / first forward" : "; not overlapped")});
  v.push_back({"pp_bubble",
               "schedule formula over the mean stage's forward F, backward B and weight-gradient W "
               "per micro-batch: (p-1)(F+B) GPipe/1F1B, (p-1)(F+B)/v interleaved (Narayanan et al. 2021), "
               "(p-1)(F+B-2W) ZB-H1 (Qi et al. 2023), (p/2-1)(F&B+B-3W) DualPipe (DeepSeek-V3 report, "
               "Table 2), whose ranks are paced by the mean of the two stages each holds"});
  v.push_back({"pp_p2p", "activation send/receive between stages over " + links});
  v.push_back({"optimizer", fmt::format("fused update streaming gradient, moments, master and weights at {:.2f} TB/s x "
                                        "hbm {:.2f}; offload: PCIe at the cluster's host_link_gbps and the CPU update "
                                        "at topology.host_memory_gbps {:.0f} GB/s per node shared by its GPUs "
                                        "(assumption: DGX H100 DDR5), NVMe tier: state through topology.nvme_gbps",
                                        cl.device.hbm_tbps, e.hbm, cl.host_memory_gbps)});
  v.push_back({"stream", fmt::format("memory.offload = \"params\": per micro-batch the GPU's weights twice (forward, "
                                     "backward) and its gradients once over host_link_gbps {:.0f} GB/s (NVMe tier: "
                                     "nvme_gbps {:.0f} GB/s per node shared by its GPUs, assumption), hidden behind "
                                     "the micro-batch's compute when memory.prefetch_layers > 0",
                                     cl.host_link_gbps, cl.nvme_gbps)});
  return v;
}

}  // namespace mt::plan
