// lr_schedule.h — learning-rate schedules: linear warmup, then
// warmup-stable-decay (constant, then linear decay over the last decay_frac
// of steps), cosine, or constant; all end at lr * min_lr_ratio.
#pragma once
#include <cstdint>
#include <string>

namespace mt {

class ConfigSchema;

enum class ScheduleKind { kWsd, kCosine, kConstant };

struct ScheduleParams {
  ScheduleKind kind = ScheduleKind::kWsd;
  double lr = 3e-3;           // peak learning rate
  double min_lr_ratio = 0.1;  // final lr = lr * min_lr_ratio
  int64_t warmup_steps = 10;  // linear warmup from 0
  double decay_frac = 0.2;    // WSD only: the last fraction of the steps decays linearly
};

// lr for optimizer step `step` (0-based) of a run of `total_steps`.
double learning_rate(const ScheduleParams& p, int64_t step, int64_t total_steps);

// Declares lr, min_lr_ratio, warmup_steps, schedule, decay_frac under `table`.
void declare_keys(ConfigSchema& s, ScheduleParams& p, const std::string& table);

}  // namespace mt
