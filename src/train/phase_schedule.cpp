// phase_schedule.cpp — see phase_schedule.h.
#include "train/phase_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "core/check.h"
#include "optim/lr_schedule.h"

namespace mt {
namespace {

std::string key(size_t i, const char* k) { return fmt::format("phase[{}].{}", i, k); }

// The step's batch on a linear ramp from `from` to `to` at progress x in [0,
// 1], rounded to the nearest multiple of the micro-batch `q` (never below
// one micro-batch, never past `to`).
int64_t ramp_batch(int64_t from, int64_t to, int64_t q, double x) {
  const double b = double(from) + double(to - from) * x;
  const int64_t r = q * int64_t(std::floor(b / double(q) + 0.5));
  return std::clamp<int64_t>(r, q, to);
}

// Checks a phase's own keys and fills its span's batch and length;
// `rest_steps` is the length of a phase that has neither steps nor tokens.
Status expand(const PhaseConfig& pc, size_t i, const RunConfig& c, int64_t rest_steps, PhaseSpan& ph) {
  const ConfigOrigins& o = c.origins;
  const TrainConfig& t = c.train;
  const int64_t q = t.batch_size;
  ph.name = pc.name.empty() ? fmt::format("phase {}", i + 1) : pc.name;
  ph.global_batch = pc.global_batch > 0 ? pc.global_batch : t.batch_size * t.grad_accum;
  ph.ramp_from = pc.ramp_from;
  ph.seq_len = pc.seq_len > 0 ? pc.seq_len : t.seq_len;
  ph.model = c.model;
  if (pc.rope_theta > 0) ph.model.rope_theta = pc.rope_theta;
  if (!pc.rope_scaling.empty())
    ph.model.rope_scaling = pc.rope_scaling == "linear" ? RopeScalingKind::kLinear
                            : pc.rope_scaling == "yarn" ? RopeScalingKind::kYarn
                                                        : RopeScalingKind::kNone;
  if (pc.rope_factor > 0) ph.model.rope_factor = pc.rope_factor;
  if (pc.rope_original_len > 0) ph.model.rope_original_len = pc.rope_original_len;
  if (pc.rope_factor > 0 && pc.rope_factor < 1) return o.error(key(i, "rope_factor"), "must be >= 1 (or 0)");
  if (!pc.rope_scaling.empty() || pc.rope_factor > 0 || pc.rope_original_len > 0)
    if (Status v = ph.model.validate(o, ph.seq_len); !v) return o.error(key(i, "rope_scaling"), v.message());
  if (pc.seq_len > 0 && pc.seq_len != t.seq_len) {
    if (c.data.dataset.empty())
      return o.error(key(i, "seq_len"),
                     "a phase's own sequence length needs data.dataset (each length reads its own "
                     "data segment of one pool of documents)");
    if (Status v = c.model.validate(o, ph.seq_len); !v)
      return o.error(key(i, "seq_len"), fmt::format("{} tokens: {}", ph.seq_len, v.message()));
    if (c.model.n_experts > 0 && (t.batch_size * ph.seq_len) % c.model.group_size(ph.seq_len) != 0)
      return o.error(key(i, "seq_len"), fmt::format("the routing group of {} tokens must divide batch_size x seq_len = "
                                                    "{}",
                                                    c.model.group_size(ph.seq_len), t.batch_size * ph.seq_len));
  }
  ph.lr = pc.lr;
  ph.aux_loss_coef = pc.aux_loss_coef;
  ph.z_loss_coef = pc.z_loss_coef;
  ph.mtp_loss_weight = pc.mtp_loss_weight;
  ph.mixture = pc.mixture.empty() ? c.data.mixture : pc.mixture;
  if (!pc.mixture.empty() && c.data.dataset.empty())
    return o.error(key(i, "mixture"), "a phase's mixture needs data.dataset (a `moetrain data build` directory)");
  if (ph.global_batch % q != 0)
    return o.error(key(i, "global_batch"), fmt::format("{} sequences is not a multiple of train.batch_size = {} (the "
                                                       "sequences of one micro-batch)",
                                                       ph.global_batch, q));
  if (pc.ramp_from > 0 && pc.ramp_from >= ph.global_batch)
    return o.error(key(i, "ramp_from"), fmt::format("{} sequences must be below the phase's global batch {} (a ramp "
                                                    "grows the batch)",
                                                    pc.ramp_from, ph.global_batch));
  if (pc.steps > 0 && pc.tokens > 0) return o.error(key(i, "tokens"), "give the phase's length once: steps or tokens");
  const double step_tokens = double(ph.global_batch) * double(ph.seq_len);
  if (pc.ramp_from == 0) {
    ph.steps = pc.steps > 0 ? pc.steps : pc.tokens > 0 ? int64_t(std::ceil(pc.tokens / step_tokens)) : rest_steps;
    ph.sequences = ph.steps * ph.global_batch;
    return Status::ok();
  }
  // A ramp: by progress in steps (a steps length) or in tokens (as the planner's ramps).
  int64_t seen = 0;
  auto push = [&](int64_t b) {
    ph.ramp_before.push_back(seen);
    ph.ramp_batch.push_back(b);
    seen += b;
  };
  if (pc.tokens > 0) {
    for (double done = 0; done < pc.tokens; done += double(ph.ramp_batch.back()) * double(ph.seq_len))
      push(ramp_batch(pc.ramp_from, ph.global_batch, q, done / pc.tokens));
  } else {
    const int64_t n = pc.steps > 0 ? pc.steps : rest_steps;
    for (int64_t s = 0; s < n; ++s) push(ramp_batch(pc.ramp_from, ph.global_batch, q, double(s) / double(n)));
  }
  ph.steps = int64_t(ph.ramp_batch.size());
  ph.sequences = seen;
  return Status::ok();
}

bool has_length(const PhaseConfig& p) { return p.steps > 0 || p.tokens > 0; }

}  // namespace

Status resolve_phase_steps(RunConfig& c) {
  if (c.phases.empty()) return Status::ok();
  const ConfigOrigins& o = c.origins;
  int64_t given = 0;
  int64_t rest = -1;
  for (size_t i = 0; i < c.phases.size(); ++i) {
    if (!has_length(c.phases[i])) {
      if (rest >= 0)
        return o.error(key(i, "steps"), fmt::format("phase[{}] and phase[{}] both have no length (steps or tokens); "
                                                    "one phase at most takes the rest of train.steps",
                                                    rest, i));
      rest = int64_t(i);
      continue;
    }
    PhaseSpan ph;
    MT_RETURN_IF_ERROR(expand(c.phases[i], i, c, 0, ph));
    if (ph.steps < 1) return o.error(key(i, "tokens"), "the phase has no step");
    given += ph.steps;
  }
  if (rest >= 0) {
    if (!o.was_set("train.steps"))
      return o.error(key(size_t(rest), "steps"),
                     "the phase has no length: give steps or tokens, or set train.steps "
                     "for it to take what the other phases leave");
    if (c.train.steps <= given)
      return o.error("train.steps", fmt::format("{} steps leave nothing for phase[{}] (the other phases take {})",
                                                c.train.steps, rest, given));
    return Status::ok();
  }
  if (o.was_set("train.steps") && c.train.steps != given)
    return o.error("train.steps", fmt::format("{} steps, but the phases add up to {} (leave train.steps out, or one "
                                              "phase's length, to let the other give it)",
                                              c.train.steps, given));
  c.train.steps = given;
  return Status::ok();
}

Result<PhaseSchedule> PhaseSchedule::make(const RunConfig& c) {
  const TrainConfig& t = c.train;
  PhaseSchedule s;
  s.phased_ = !c.phases.empty();
  s.micro_ = t.batch_size;
  s.schedule_ = t.schedule;
  std::vector<PhaseConfig> configs = c.phases;
  if (configs.empty()) {  // one phase: the whole run
    configs.emplace_back();
    configs.back().steps = t.steps;
  }
  int64_t given = 0;
  for (size_t i = 0; i < configs.size(); ++i)
    if (has_length(configs[i])) {
      PhaseSpan ph;
      MT_RETURN_IF_ERROR(expand(configs[i], i, c, 0, ph));
      given += ph.steps;
    }
  int64_t step = 0;
  for (size_t i = 0; i < configs.size(); ++i) {
    PhaseSpan ph;
    MT_RETURN_IF_ERROR(expand(configs[i], i, c, t.steps - given, ph));
    ph.first_step = step;
    step += ph.steps;
    const bool same =
        !s.segments_.empty() && s.segments_.back().mixture == ph.mixture && s.segments_.back().seq_len == ph.seq_len;
    if (!same) s.segments_.push_back(DataSegment{ph.mixture, ph.seq_len, int64_t(i), 0, ph.first_step, 0, 0});
    DataSegment& seg = s.segments_.back();
    seg.steps += ph.steps;
    ph.segment = int64_t(s.segments_.size()) - 1;
    ph.first_sequence = seg.sequences;
    seg.sequences += ph.sequences;
    ++seg.phases;
    s.tokens_before_phase_.push_back(i == 0 ? 0 : s.tokens_before_phase_.back() + s.phases_.back().tokens());
    s.phases_.push_back(std::move(ph));
  }
  s.total_steps_ = step;
  if (step != t.steps)
    return c.origins.error("train.steps", fmt::format("{} steps, but the phases add up to {}", t.steps, step));
  return s;
}

size_t PhaseSchedule::phase_at(int64_t step) const {
  MT_CHECK(step >= 0 && step < total_steps_, "step {} outside the run's {} steps", step, total_steps_);
  auto it = std::upper_bound(phases_.begin(), phases_.end(), step,
                             [](int64_t s, const PhaseSpan& p) { return s < p.first_step; });
  return size_t(it - phases_.begin()) - 1;
}

int64_t PhaseSchedule::batch_at(int64_t step) const {
  const PhaseSpan& p = phases_[phase_at(step)];
  return p.batch_at(step - p.first_step);
}

int64_t PhaseSchedule::micro_batches(int64_t step) const { return batch_at(step) / micro_; }

int64_t PhaseSchedule::first_sequence(int64_t step) const {
  const PhaseSpan& p = phases_[phase_at(step)];
  return p.first_sequence + p.before(step - p.first_step);
}

int64_t PhaseSchedule::tokens_before(int64_t step) const {
  if (step >= total_steps_) return tokens_before_phase_.back() + phases_.back().tokens();
  const size_t i = phase_at(step);
  const PhaseSpan& p = phases_[i];
  return tokens_before_phase_[i] + p.before(step - p.first_step) * p.seq_len;
}

int64_t PhaseSchedule::max_seq_len() const {
  int64_t m = 0;
  for (const PhaseSpan& p : phases_) m = std::max(m, p.seq_len);
  return m;
}

double PhaseSchedule::learning_rate(int64_t step) const {
  const PhaseSpan& p = phases_[phase_at(step)];
  const ScheduleParams& s = schedule_;
  const double x = double(step - p.first_step + 1) / double(p.steps), min_lr = s.lr * s.min_lr_ratio;
  switch (p.lr) {
    case LrSegment::kSchedule:
      return mt::learning_rate(s, step, total_steps_);
    case LrSegment::kWarmup:
      return s.lr * x;
    case LrSegment::kStable:
      return s.lr;
    case LrSegment::kDecay:
      return s.kind == ScheduleKind::kCosine ? min_lr + 0.5 * (s.lr - min_lr) * (1.0 + std::cos(M_PI * x))
                                             : s.lr + (min_lr - s.lr) * x;
  }
  return s.lr;
}

Result<int64_t> PhaseSchedule::stop_step(const std::string& spec) const {
  if (!spec.empty() && std::all_of(spec.begin(), spec.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
    errno = 0;
    const long long s = std::strtoll(spec.c_str(), nullptr, 10);
    if (s < 1 || errno == ERANGE)
      return Status::errorf("--stop-at: {} is not a step of a run (steps count from 1 to 2^63 - 1)", spec);
    return int64_t(s);
  }
  std::string names;
  for (const PhaseSpan& p : phases_) {
    if (p.name == spec) return p.first_step + p.steps;
    names += (names.empty() ? "" : ", ") + fmt::format("\"{}\" (ends at step {})", p.name, p.first_step + p.steps);
  }
  return Status::errorf("--stop-at: '{}' is neither a step number nor a phase of this run ({})", spec,
                        phased_ ? names : "it has no [[phase]] tables");
}

}  // namespace mt
