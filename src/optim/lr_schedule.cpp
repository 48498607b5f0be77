// lr_schedule.cpp — pure function of (params, step, total steps), and its keys.
#include "optim/lr_schedule.h"

#include "core/config_schema.h"

#include <algorithm>
#include <cmath>

namespace mt {

double learning_rate(const ScheduleParams& p, int64_t step, int64_t total_steps) {
  const double min_lr = p.lr * p.min_lr_ratio;
  if (step < p.warmup_steps) return p.lr * double(step + 1) / double(p.warmup_steps);
  switch (p.kind) {
    case ScheduleKind::kConstant:
      return p.lr;
    case ScheduleKind::kCosine: {
      const double span = std::max<int64_t>(1, total_steps - p.warmup_steps);
      const double t = std::clamp(double(step - p.warmup_steps) / span, 0.0, 1.0);
      return min_lr + 0.5 * (p.lr - min_lr) * (1.0 + std::cos(M_PI * t));
    }
    case ScheduleKind::kWsd: {
      const int64_t decay_steps = int64_t(std::ceil(p.decay_frac * double(total_steps)));
      const int64_t decay_start = std::max(p.warmup_steps, total_steps - decay_steps);
      if (step < decay_start) return p.lr;
      const double span = std::max<int64_t>(1, total_steps - decay_start);
      const double t = std::clamp(double(step - decay_start + 1) / span, 0.0, 1.0);
      return p.lr + (min_lr - p.lr) * t;
    }
  }
  return p.lr;
}

void declare_keys(ConfigSchema& s, ScheduleParams& p, const std::string& t) {
  s.add(t + ".lr", &p.lr, "peak learning rate").above(0);
  s.add(t + ".min_lr_ratio", &p.min_lr_ratio, "final lr = lr * min_lr_ratio").range(0, 1);
  s.add(t + ".warmup_steps", &p.warmup_steps, "linear warmup from 0").range(0, int64_t(1) << 40).unit("steps");
  s.add_enum(t + ".schedule", &p.kind, {"wsd", "cosine", "constant"},
             "after warmup: warmup-stable-decay, cosine to min_lr, or constant");
  s.add(t + ".decay_frac", &p.decay_frac, "wsd: the last fraction of the steps decays linearly to min_lr").range(0, 1);
}

}  // namespace mt
