// search.cpp — see search.h.
#include "plan/search.h"

#include <fmt/format.h>

#include <algorithm>

namespace mt::plan {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct Candidate {
  LayoutConfig layout;
  Parallel par;
};

// The layouts a search tries: every one, or plain FSDP (ZeRO-3 data parallelism only).
enum class Space { kAll, kFsdp };

constexpr int64_t kMicrobatchesPerStage = 4;  // the largest-model search's batch: 4 x pp micro-batches per replica

std::vector<Recompute> recompute_choices(const LayoutConfig& base) {
  std::vector<Recompute> r = {Recompute::kNone, Recompute::kFull};
  if (!base.flash_attention) r.insert(r.begin() + 1, Recompute::kSelective);
  return r;
}

// Every layout over `gpus` GPUs that resolves against the model (memory not checked).
std::vector<Candidate> candidates(const ModelConfig& m, int64_t seq_len, const ClusterConfig& c,
                                  const LayoutConfig& base, int64_t gpus, bool keep_batch, Space space = Space::kAll) {
  std::vector<Candidate> out;
  const std::vector<Recompute> recomputes = recompute_choices(base);
  const bool fsdp = space == Space::kFsdp;
  for (int64_t tp : {1, 2, 4, 8}) {
    if (tp > c.device.gpus_per_domain || gpus % tp != 0 || (fsdp && tp > 1)) continue;
    for (int64_t pp : {1, 2, 4, 8, 16, 32}) {
      // Context parallelism is kept as the base layout sets it (plain FSDP has none).
      const int64_t cp = fsdp ? 1 : base.cp;
      if (pp > m.n_layers || gpus % (tp * cp * pp) != 0 || (fsdp && pp > 1)) continue;
      const int64_t dp = gpus / (tp * cp * pp);
      std::vector<int64_t> eps = {1};
      if (m.n_experts > 0 && !fsdp)
        for (int64_t ep = 2; ep <= std::min(m.n_experts, dp * cp * tp); ep *= 2)
          if (m.n_experts % ep == 0 && (dp * cp * tp) % ep == 0) eps.push_back(ep);
      for (int64_t ep : eps)
        for (int64_t zero : fsdp ? std::vector<int64_t>{3} : std::vector<int64_t>{1, 3})
          for (Recompute rc : recomputes) {
            LayoutConfig l = base;
            l.tp = tp;
            l.pp = pp;
            l.ep = ep;
            l.cp = cp;
            l.dp = 0;
            l.gpus = gpus;
            l.zero_stage = zero;
            l.recompute = rc;
            if (pp == 1) {
              l.schedule = PipeSchedule::k1F1B;
              l.virtual_stages = 1;
            } else if (base.pp == 1) {
              l.schedule = PipeSchedule::k1F1B;
              l.virtual_stages = 1;
            }
            if (l.schedule == PipeSchedule::kInterleaved && pp * l.virtual_stages > m.n_layers) {
              l.schedule = PipeSchedule::k1F1B;
              l.virtual_stages = 1;
            }
            if (l.schedule == PipeSchedule::kDualPipe && pp % 2 != 0) l.schedule = PipeSchedule::k1F1B;
            if (!keep_batch) l.global_batch = dp * l.micro_batch * kMicrobatchesPerStage * pp;
            auto par = resolve(l, m, seq_len, c);
            if (!par) continue;
            out.push_back({l, *par});
          }
    }
  }
  return out;
}

// The model with the family knob set to `k` units.
ModelConfig member(const ModelConfig& base, FamilyAxis axis, int64_t k) {
  ModelConfig m = base;
  if (axis == FamilyAxis::kLayers) {
    m.n_layers = k * int64_t(base.layer_pattern.size());
    m.n_dense_layers = std::min(base.n_dense_layers, m.n_layers);
  } else {
    m.n_experts = 8 * k;
    m.top_k = std::min(base.top_k, m.n_experts);
  }
  return m;
}

// A single-domain cluster: the domain is the whole job.
ClusterConfig domain_cluster(const ClusterConfig& c, int64_t gpus) {
  ClusterConfig d = c;
  d.racks = 1;
  d.spare_racks = 0;
  d.gpus_per_rack = gpus;
  d.sla_min_gpus_up = 0;
  d.device.gpus_per_domain = std::max<int64_t>(c.device.gpus_per_domain, gpus);
  return d;
}

struct SizeResult {
  bool fits = false;
  LayoutOption best_fit;   // best MFU among fitting layouts (when fits)
  LayoutOption least_mem;  // smallest memory among all layouts
};

SizeResult evaluate_size(const ModelConfig& m, int64_t seq_len, const ClusterConfig& c, const LayoutConfig& base,
                         int64_t gpus, bool with_time, Space space) {
  SizeResult r;
  const ModelStats s = model_stats(m, seq_len);
  double least = 0;
  for (const Candidate& cand : candidates(m, seq_len, c, base, gpus, false, space)) {
    const MemoryBreakdown mem = memory_per_gpu(m, s, cand.par, c);
    if (r.least_mem.label.empty() || mem.total() < least) {
      least = mem.total();
      r.least_mem = {layout_label(cand.layout), cand.par, mem, {}};
    }
    if (!mem.fits()) continue;
    if (!with_time) {
      r.fits = true;
      continue;
    }
    const StepTime t = step_time(m, s, cand.par, c);
    if (!r.fits || t.mfu > r.best_fit.time.mfu) r.best_fit = {layout_label(cand.layout), cand.par, mem, t};
    r.fits = true;
  }
  return r;
}

}  // namespace

std::string layout_label(const LayoutConfig& l) {
  std::string s = l.cp > 1 ? fmt::format("tp{} cp{} pp{}", l.tp, l.cp, l.pp) : fmt::format("tp{} pp{}", l.tp, l.pp);
  if (l.pp > 1 && l.schedule == PipeSchedule::kInterleaved) s += fmt::format("x{}", l.virtual_stages);
  if (l.ep > 1) s += fmt::format(" ep{}", l.ep);
  s += fmt::format(" zero{}", l.zero_stage);
  if (l.zero_stage == 2 && l.zero2_grads == Zero2Grads::kFull) s += "(full grads)";
  if (l.recompute != Recompute::kNone) s += " " + to_string(l.recompute);
  if (l.offload == Offload::kOptimizer) s += " offload";
  if (l.offload == Offload::kParams)
    s += l.offload_tier == OffloadTier::kNvme ? " stream(nvme)" : " stream(host)";
  return s;
}

std::vector<LayoutOption> sweep_layouts(const ModelConfig& m, const ModelStats& s, int64_t seq_len,
                                        const ClusterConfig& c, const LayoutConfig& base, int64_t gpus) {
  std::vector<LayoutOption> out;
  for (const Candidate& cand : candidates(m, seq_len, c, base, gpus, true)) {
    const MemoryBreakdown mem = memory_per_gpu(m, s, cand.par, c);
    if (!mem.fits()) continue;
    out.push_back({layout_label(cand.layout), cand.par, mem, step_time(m, s, cand.par, c)});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const LayoutOption& a, const LayoutOption& b) { return a.time.mfu > b.time.mfu; });
  return out;
}

std::string to_string(FamilyAxis a) { return a == FamilyAxis::kLayers ? "layers" : "experts"; }

namespace {

// The largest member of the family that fits `gpus` GPUs of `dc` with the layouts of `space`.
LargestFit largest_fit(const ModelConfig& base, FamilyAxis axis, int64_t seq_len, const ClusterConfig& dc,
                       const LayoutConfig& base_layout, int64_t gpus, Space space) {
  LargestFit r;
  const int64_t cap = axis == FamilyAxis::kLayers ? 4096 / int64_t(base.layer_pattern.size()) : 8192;
  auto size = [&](int64_t k, bool with_time) {
    return evaluate_size(member(base, axis, k), seq_len, dc, base_layout, gpus, with_time, space);
  };
  auto fits = [&](int64_t k) { return size(k, false).fits; };
  // Exponential then binary search for the largest k that fits (memory grows with k).
  int64_t lo = 0, hi = 1;
  while (hi <= cap && fits(hi)) lo = hi, hi *= 2;
  if (hi > cap) {
    hi = cap + 1;
    r.hit_cap = fits(cap);
    if (r.hit_cap) lo = cap;
  }
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  if (lo == 0) {
    const SizeResult first = size(1, false);
    r.next_params = model_stats(member(base, axis, 1), seq_len).total;
    r.next_mem = first.least_mem.mem;
    r.next_label = first.least_mem.label;
  } else {
    r.found = true;
    r.model = member(base, axis, lo);
    const ModelStats s = model_stats(r.model, seq_len);
    r.total_params = s.total;
    r.active_params = s.active_params;
    r.best = size(lo, true).best_fit;
    if (!r.hit_cap) {
      const SizeResult nr = size(lo + 1, false);
      r.next_params = model_stats(member(base, axis, lo + 1), seq_len).total;
      r.next_mem = nr.least_mem.mem;
      r.next_label = nr.least_mem.label;
    }
  }
  if (!r.hit_cap && r.next_mem.capacity > 0) {
    MemoryItem top;
    for (const MemoryItem& it : r.next_mem.items())
      if (it.bytes > top.bytes) top = it;
    r.binding = fmt::format("{} ({:.0f}% of the {:.1f} GiB the leanest layout '{}' needs; capacity {:.1f} GiB)",
                            top.label, 100.0 * top.bytes / r.next_mem.total(), r.next_mem.total() / kGiB,
                            r.next_label, r.next_mem.capacity / kGiB);
  } else if (r.hit_cap) {
    r.binding = "nothing within the search range (memory per GPU stays below capacity)";
  }
  return r;
}

}  // namespace

LargestModel largest_model_per_domain(const ModelConfig& base, int64_t seq_len, const ClusterConfig& c,
                                      const LayoutConfig& base_layout, FamilyAxis axis) {
  LargestModel r;
  r.axis = axis;
  r.gpus = c.device.gpus_per_domain;
  if (c.gpus_per_rack == c.device.gpus_per_domain) r.gpus = std::min(r.gpus, c.usable_gpus_per_rack());
  const ClusterConfig dc = domain_cluster(c, r.gpus);
  static_cast<LargestFit&>(r) = largest_fit(base, axis, seq_len, dc, base_layout, r.gpus, Space::kAll);
  r.fsdp = largest_fit(base, axis, seq_len, dc, base_layout, r.gpus, Space::kFsdp);
  LayoutConfig streamed = base_layout;
  streamed.offload = Offload::kParams;
  streamed.offload_tier = OffloadTier::kHost;
  streamed.prefetch_layers = std::max<int64_t>(1, base_layout.prefetch_layers);
  r.streaming = largest_fit(base, axis, seq_len, dc, streamed, r.gpus, Space::kAll);
  SearchAssumptions& a = r.assumptions;
  a.seq_len = seq_len;
  a.micro_batch = base_layout.micro_batch;
  a.microbatches_per_stage = kMicrobatchesPerStage;
  a.recompute = recompute_choices(base_layout);
  a.params = base_layout.params;
  a.grads = base_layout.grads;
  a.optimizer = base_layout.optimizer;
  a.moments = base_layout.moments;
  const double opt = (base_layout.optimizer == OptimizerKind::kAdamW ? 2.0 : 1.0) *
                     (base_layout.moments == Precision::kBf16 ? 2.0 : 4.0);
  const double grads = base_layout.grads == Precision::kBf16 ? 2.0 : 4.0;
  a.state_bytes_per_param = base_layout.params == Precision::kBf16 ? 2.0 + grads + 4.0 + opt : 4.0 + grads + opt;
  a.capacity_bytes = dc.device.hbm_gib * kGiB;
  a.allocator_overhead = allocator_overhead(base_layout);
  a.layouts_best = fmt::format("tp 1-8 within the domain, pp 1-32, {}ZeRO 1 or 3, the layout's schedule, precision "
                               "and overlap settings", base.n_experts > 0 ? "ep any power of two dividing the experts, " : "");
  a.layouts_fsdp = "tp 1, pp 1, ep 1, ZeRO 3 (every parameter, gradient and optimizer state sharded over the domain)";
  return r;
}

}  // namespace mt::plan
