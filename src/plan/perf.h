// perf.h — step time and MFU of a layout. Compute time is built kernel by
// kernel from a roofline (GEMMs: max of FLOPs at the sustained tensor-core
// rate and bytes at the sustained HBM rate, plus a fixed per-kernel latency;
// fused attention at its own rate; element-wise kernels at the HBM rate).
// Communication time comes from message sizes and link bandwidths (NVLink
// inside a domain, scale-out across; hierarchical reduce-scatter/all-gather,
// all-to-all split by where the peers are). Overlap is explicit: TP
// collectives hide behind the layer's GEMMs, gradient reduce-scatter behind
// the last micro-batch's backward, parameter all-gather behind the first
// forward, all-to-all by the layout's `ep_overlap`; hidden communication still
// costs (1 - overlap efficiency) of its time. SMs a layout reserves for
// communication kernels (parallel.comm_sms) slow every compute kernel by the
// share they take. Pipeline bubbles follow the schedule. MFU uses the same
// FLOP count as `moetrain bench` (model/flops.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "plan/cluster.h"
#include "plan/layout.h"
#include "plan/model_stats.h"

namespace mt::plan {

// Where the members of a process group sit: n GPUs, m of them per NVLink domain.
struct GroupSpan {
  int64_t n = 1, m = 1;
};

struct Links {
  double nvlink_Bps = 0;    // per GPU per direction, achieved
  double scaleout_Bps = 0;  // per GPU per direction, achieved
  double latency_s = 0;     // fixed cost per collective
};
Links links_of(const ClusterConfig& c);

// Collective times for a buffer of `bytes` (the full, unsharded size per GPU).
double all_gather_s(double bytes, GroupSpan g, const Links& l);      // = reduce-scatter
double reduce_scatter_s(double bytes, GroupSpan g, const Links& l);
double all_reduce_s(double bytes, GroupSpan g, const Links& l);
double all_to_all_s(double bytes, GroupSpan g, const Links& l);      // bytes = what one GPU sends in total
double p2p_s(double bytes, bool same_domain, const Links& l);
// All-to-all dispatch under node-limited routing (DeepSeek-V3 sections 2.1.2 and 3.2.2): a token whose K
// expert rows go to at most `domains` NVLink domains crosses the scale-out network once per destination
// domain and is forwarded to the experts' GPUs inside it over NVLink. `bytes` as all_to_all_s; with N
// domains in the group a token's destination is remote with odds (N - 1) / N, so the scale-out part is
// bytes x domains / K x (N - 1) / N instead of bytes x (N - 1) / N, and NVLink carries the home-domain
// rows plus the forwarded ones; two hops of latency.
double all_to_all_node_limited_s(double bytes, double k, double domains, GroupSpan g, const Links& l);
// NVLink domains a token's experts span at most under group-limited routing: min(K, domains of the EP
// group, M x domains one group spans); K (no bound) when the model does not limit groups.
double ep_domains_per_token(const ModelConfig& c, GroupSpan ep);

// Group spans for rank order tp (fastest), cp, ep within dp x cp x tp, dp, pp (slowest). dp is the
// gradient-reduction group: the dp x cp ranks that hold the same weights.
struct GroupSpans {
  GroupSpan tp, cp, dp, ep, edp, pp;
  bool pp_same_domain = false;
  bool cp_same_domain = true;  // the whole K/V ring inside one NVLink domain
};
GroupSpans group_spans(const Parallel& p, int64_t gpus_per_domain);

// Time hidden behind a compute window: exposed = max(0, comm - ov * window)
// + (1 - ov) * min(comm, ov * window).
double exposed_s(double comm, double window, double ov);

// Roofline time of one GEMM (M, N, K) in bf16.
double gemm_s(double M, double N, double K, const ClusterConfig& c);

struct StepTime {
  // Per step, busiest pipeline stage.
  double compute_s = 0;       // forward + backward kernels of all micro-batches (no recompute)
  double recompute_s = 0;     // extra forward work of activation recomputation
  double tp_comm_s = 0, tp_exposed_s = 0;
  double ep_comm_s = 0, ep_exposed_s = 0;
  double cp_comm_s = 0, cp_exposed_s = 0;  // context parallelism's K/V ring (window layers: halos)
  double cp_bytes = 0;                     // bytes a rank receives for it per step (cpu cluster: rank 0's, exactly)
  double dp_comm_s = 0, dp_exposed_s = 0;
  double pp_p2p_exposed_s = 0;
  double bubble_s = 0;
  double optimizer_s = 0;     // optimizer update (memory-bound), offload transfers
  double stream_s = 0, stream_exposed_s = 0;  // weight streaming: weights in, gradients out, all micro-batches
  double step_s = 0;
  // Rates.
  double model_flops_per_step = 0;  // model/flops.h count x tokens per step
  double tokens_per_s = 0;
  double mfu = 0;                   // model FLOPs / (step time x GPUs x peak); causal-half attention count
  double mfu_full_square = 0;       // the same with attention over the full square (ModelStats)
  double hfu = 0;                   // hardware FLOPs (with recomputation) / (...)
  double stage_fwd_s = 0, stage_bwd_s = 0;  // one micro-batch on the busiest rank (DualPipe: its two stages' mean)
  // The mean stage, one micro-batch: everything (F + B with exposed communication), the backward B (with
  // recomputation) and its weight-gradient GEMMs W; the bubble formulas use them.
  double mean_stage_s = 0, mean_stage_bwd_s = 0, mean_stage_wgrad_s = 0;
};

StepTime step_time(const ModelConfig& c, const ModelStats& s, const Parallel& p, const ClusterConfig& cl);

// Where each term of the step time comes from: the formula, the constants it
// uses with their values for this cluster, and whether each constant is
// fitted (to the Megatron-LM H100 table), a published figure or an
// assumption. Keys match the JSON `step_time` object.
struct TermSource {
  std::string term;    // "compute", "tp_comm", ...
  std::string source;
};
std::vector<TermSource> step_time_sources(const ClusterConfig& cl, const LayoutConfig& l);

}  // namespace mt::plan
