// phases.cpp — see phases.h. Each phase is resolved and timed on its own; a
// ramp is timed level by level (the micro-batch count, hence the pipeline
// bubble and the step time, change with the batch).
#include "plan/phases.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace mt::plan {

std::vector<RampLevel> ramp_levels(int64_t from, int64_t to, int64_t quantum, double tokens, int64_t seq_len,
                                   int64_t max_levels) {
  MT_CHECK(from > 0 && to > from && quantum > 0 && to % quantum == 0 && max_levels > 1 && seq_len > 0,
           "ramp {} -> {} in steps of {} ({} levels at most, seq {})", from, to, quantum, max_levels, seq_len);
  const int64_t span = to - from, gaps = max_levels - 1;
  const int64_t q = quantum * std::max<int64_t>(1, (span + quantum * gaps - 1) / (quantum * gaps));
  int64_t n = std::llround(double(span) / double(q));  // levels below `to`
  while (n > 0 && to - n * q < quantum) --n;
  std::vector<RampLevel> out;
  const double half = 0.5 * double(q);
  for (int64_t j = n; j >= 0; --j) {
    const int64_t b = to - j * q;
    const double lo = j == n ? double(from) : std::max(double(from), double(b) - half);
    const double hi = j == 0 ? double(to) : std::min(double(to), double(b) + half);
    if (!(hi > lo)) continue;
    RampLevel r;
    r.global_batch = b;
    r.tokens = tokens * (hi - lo) / double(span);
    r.steps = r.tokens / (double(b) * double(seq_len));
    out.push_back(r);
  }
  return out;
}

namespace {

std::string phase_name(const LayoutPhase& ph, size_t i) {
  return ph.name.empty() ? fmt::format("phase {}", i + 1) : ph.name;
}

// A run config's phase: its stretches of steps at one batch, as levels (a
// single one for a constant batch).
std::vector<RampLevel> exact_levels(const std::vector<std::pair<int64_t, int64_t>>& batch_steps, int64_t seq_len) {
  std::vector<RampLevel> out;
  for (const auto& [batch, steps] : batch_steps) {
    if (out.empty() || out.back().global_batch != batch) out.push_back(RampLevel{.global_batch = batch});
    out.back().steps += double(steps);
    out.back().tokens += double(steps) * double(batch) * double(seq_len);
  }
  return out;
}

Result<PhasePlan> plan_phase(const ModelConfig& m, int64_t model_seq_len, const ClusterConfig& c, const LayoutConfig& l,
                             const std::string& name, double tokens, int64_t ramp_from,
                             const std::vector<std::pair<int64_t, int64_t>>& batch_steps = {}) {
  PhasePlan ph;
  ph.name = name;
  ph.tokens = tokens;
  ph.ramp_from = ramp_from;
  auto par = resolve(l, m, model_seq_len, c);
  if (!par) return par.status();
  ph.par = *par;
  ph.stats = model_stats(m, ph.par.seq_len, ph.par.cfg.document_tokens);
  ph.mem = memory_per_gpu(m, ph.stats, ph.par, c);
  ph.time = step_time(m, ph.stats, ph.par, c);
  if (batch_steps.size() == 1 && batch_steps[0].first == ph.par.global_batch) {
    ph.steps = batch_steps[0].second;
    ph.days = double(ph.steps) * ph.time.step_s / 86400.0;
    ph.mfu = ph.mfu_by_time = ph.time.mfu;
  } else if (ramp_from <= 0 && batch_steps.empty()) {
    ph.steps = int64_t(std::ceil(tokens / double(ph.par.tokens_per_step())));
    ph.days = double(ph.steps) * ph.time.step_s / 86400.0;
    ph.mfu = ph.mfu_by_time = ph.time.mfu;
  } else {
    ph.ramp = batch_steps.empty()
                  ? ramp_levels(ramp_from, ph.par.global_batch, ph.par.dp * ph.par.micro_batch, tokens, ph.par.seq_len)
                  : exact_levels(batch_steps, ph.par.seq_len);
    double steps = 0, mfu_tokens = 0, mfu_time = 0;
    for (RampLevel& r : ph.ramp) {
      LayoutConfig lv = l;
      lv.global_batch = r.global_batch;
      auto pv = resolve(lv, m, model_seq_len, c);
      if (!pv) return pv.status();
      const MemoryBreakdown mem = memory_per_gpu(m, ph.stats, *pv, c);
      if (mem.total() > ph.mem.total()) ph.mem = mem;
      const StepTime t = step_time(m, ph.stats, *pv, c);
      r.step_s = t.step_s;
      r.mfu = t.mfu;
      steps += r.steps;
      ph.days += r.steps * t.step_s / 86400.0;
      mfu_tokens += r.tokens * t.mfu;
      mfu_time += r.steps * t.step_s * t.mfu;
    }
    ph.steps = batch_steps.empty() ? int64_t(std::ceil(steps - 1e-9 * steps)) : int64_t(std::llround(steps));
    ph.mfu = mfu_tokens / tokens;
    ph.mfu_by_time = mfu_time / (ph.days * 86400.0);
  }
  ph.gpu_hours = ph.days * 24.0 * double(ph.par.gpus);
  return ph;
}

}  // namespace

Result<std::vector<PhasePlan>> plan_phases(const ModelConfig& m, int64_t model_seq_len, const ClusterConfig& c,
                                           const LayoutConfig& l, double tokens) {
  std::vector<PhasePlan> out;
  if (l.phases.empty()) {
    auto ph = plan_phase(m, model_seq_len, c, l, "", tokens, 0);
    if (!ph) return ph.status();
    out.push_back(std::move(*ph));
    return out;
  }
  double given = 0;
  int64_t rest = -1;
  for (size_t i = 0; i < l.phases.size(); ++i) {
    given += l.phases[i].tokens;
    if (l.phases[i].tokens == 0) rest = int64_t(i);
  }
  const double left = tokens - given;
  if (rest >= 0 && !(left > 0))
    return Status::errorf("{}: phase[{}].tokens = 0 takes what the other phases leave of --tokens {:g}, but they "
                          "already sum to {:g}", l.source, rest, tokens, given);
  if (rest < 0 && std::abs(left) > 1e-6 * tokens)
    return Status::errorf("{}: phase tokens sum to {:g} but --tokens is {:g} (set one phase's tokens = 0 to take the "
                          "rest)", l.source, given, tokens);
  for (size_t i = 0; i < l.phases.size(); ++i) {
    const LayoutPhase& ph = l.phases[i];
    LayoutConfig pl = phase_layout(ph);
    pl.source = fmt::format("{} phase[{}]", l.source, i);
    auto p = plan_phase(m, model_seq_len, c, pl, phase_name(ph, i), ph.tokens == 0 ? left : ph.tokens, ph.ramp_from,
                        ph.batch_steps);
    if (!p) return p.status();
    out.push_back(std::move(*p));
  }
  return out;
}

PhaseTotals phase_totals(const std::vector<PhasePlan>& phases) {
  PhaseTotals t;
  double gpu_h_mfu = 0, tok_mfu = 0;
  for (size_t i = 0; i < phases.size(); ++i) {
    const PhasePlan& ph = phases[i];
    t.tokens += ph.tokens;
    t.steps += ph.steps;
    t.days += ph.days;
    t.gpu_hours += ph.gpu_hours;
    tok_mfu += ph.tokens * ph.mfu;
    gpu_h_mfu += ph.gpu_hours * ph.mfu_by_time;
    if (ph.mem.total() > t.memory_bytes) t.memory_bytes = ph.mem.total(), t.fullest = i;
    if (ph.tokens > phases[t.main].tokens) t.main = i;
    t.fits = t.fits && ph.mem.fits();
  }
  t.mfu_by_tokens = t.tokens > 0 ? tok_mfu / t.tokens : 0;
  t.mfu_by_time = t.gpu_hours > 0 ? gpu_h_mfu / t.gpu_hours : 0;
  if (phases.size() == 1) t.mfu_by_tokens = phases[0].mfu, t.mfu_by_time = phases[0].mfu_by_time;  // exactly
  return t;
}

}  // namespace mt::plan
