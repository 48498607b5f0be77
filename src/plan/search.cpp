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

// Every layout over `gpus` GPUs that resolves against the model (memory not checked).
std::vector<Candidate> candidates(const ModelConfig& m, int64_t seq_len, const ClusterConfig& c,
                                  const LayoutConfig& base, int64_t gpus, bool keep_batch) {
  std::vector<Candidate> out;
  std::vector<Recompute> recomputes = {Recompute::kNone, Recompute::kFull};
  if (!base.flash_attention) recomputes.insert(recomputes.begin() + 1, Recompute::kSelective);
  for (int64_t tp : {1, 2, 4, 8}) {
    if (tp > c.device.gpus_per_domain || gpus % tp != 0) continue;
    for (int64_t pp : {1, 2, 4, 8, 16, 32}) {
      // Context parallelism is kept as the base layout sets it.
      const int64_t cp = base.cp;
      if (pp > m.n_layers || gpus % (tp * cp * pp) != 0) continue;
      const int64_t dp = gpus / (tp * cp * pp);
      std::vector<int64_t> eps = {1};
      if (m.n_experts > 0)
        for (int64_t ep = 2; ep <= std::min(m.n_experts, dp * cp * tp); ep *= 2)
          if (m.n_experts % ep == 0 && (dp * cp * tp) % ep == 0) eps.push_back(ep);
      for (int64_t ep : eps)
        for (int64_t zero : {1, 3})
          for (Recompute rc : recomputes) {
            LayoutConfig l = base;
            l.tp = tp;
            l.pp = pp;
            l.ep = ep;
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
            if (!keep_batch) l.global_batch = dp * l.micro_batch * std::max<int64_t>(1, 4 * pp);
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
                         int64_t gpus, bool with_time) {
  SizeResult r;
  const ModelStats s = model_stats(m, seq_len);
  double least = 0;
  for (const Candidate& cand : candidates(m, seq_len, c, base, gpus, false)) {
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
  if (l.recompute != Recompute::kNone) s += " " + to_string(l.recompute);
  if (l.offload == Offload::kOptimizer) s += " offload";
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

LargestModel largest_model_per_domain(const ModelConfig& base, int64_t seq_len, const ClusterConfig& c,
                                      const LayoutConfig& base_layout, FamilyAxis axis) {
  LargestModel r;
  r.axis = axis;
  r.gpus = c.device.gpus_per_domain;
  if (c.gpus_per_rack == c.device.gpus_per_domain) r.gpus = std::min(r.gpus, c.usable_gpus_per_rack());
  const ClusterConfig dc = domain_cluster(c, r.gpus);
  const int64_t cap = axis == FamilyAxis::kLayers ? 4096 / int64_t(base.layer_pattern.size()) : 8192;
  auto fits = [&](int64_t k) { return evaluate_size(member(base, axis, k), seq_len, dc, base_layout, r.gpus, false).fits; };
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
    const SizeResult first = evaluate_size(member(base, axis, 1), seq_len, dc, base_layout, r.gpus, false);
    r.next_params = model_stats(member(base, axis, 1), seq_len).total;
    r.next_mem = first.least_mem.mem;
    r.next_label = first.least_mem.label;
  } else {
    r.found = true;
    r.model = member(base, axis, lo);
    const ModelStats s = model_stats(r.model, seq_len);
    r.total_params = s.total;
    r.active_params = s.active_params;
    r.best = evaluate_size(r.model, seq_len, dc, base_layout, r.gpus, true).best_fit;
    if (!r.hit_cap) {
      const ModelConfig next = member(base, axis, lo + 1);
      const SizeResult nr = evaluate_size(next, seq_len, dc, base_layout, r.gpus, false);
      r.next_params = model_stats(next, seq_len).total;
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

}  // namespace mt::plan
