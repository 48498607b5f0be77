// lr_schedule.h — learning-rate schedules: linear warmup, then
// warmup-stable-decay (constant, then linear decay over the last decay_frac
// of steps), cosine, or constant; all end at lr * min_lr_ratio.
#pragma once
#include <cstdint>

namespace mt {

enum class ScheduleKind { kWsd, kCosine, kConstant };

struct ScheduleParams {
  ScheduleKind kind = ScheduleKind::kWsd;
  double lr = 3e-3;
  double min_lr_ratio = 0.1;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
  double decay_frac = 0.2;  // WSD only
};

// lr for optimizer step `step` (0-based).
double learning_rate(const ScheduleParams& p, int64_t step);

}  // namespace mt
