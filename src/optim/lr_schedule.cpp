// lr_schedule.cpp — pure function of (params, step).
#include "optim/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace mt {

double learning_rate(const ScheduleParams& p, int64_t step) {
  const double min_lr = p.lr * p.min_lr_ratio;
  if (step < p.warmup_steps) return p.lr * double(step + 1) / double(p.warmup_steps);
  switch (p.kind) {
    case ScheduleKind::kConstant:
      return p.lr;
    case ScheduleKind::kCosine: {
      const double span = std::max<int64_t>(1, p.total_steps - p.warmup_steps);
      const double t = std::clamp(double(step - p.warmup_steps) / span, 0.0, 1.0);
      return min_lr + 0.5 * (p.lr - min_lr) * (1.0 + std::cos(M_PI * t));
    }
    case ScheduleKind::kWsd: {
      const int64_t decay_steps = int64_t(std::ceil(p.decay_frac * double(p.total_steps)));
      const int64_t decay_start = std::max(p.warmup_steps, p.total_steps - decay_steps);
      if (step < decay_start) return p.lr;
      const double span = std::max<int64_t>(1, p.total_steps - decay_start);
      const double t = std::clamp(double(step - decay_start + 1) / span, 0.0, 1.0);
      return p.lr + (min_lr - p.lr) * t;
    }
  }
  return p.lr;
}

}  // namespace mt
