// spike_guard.h — loss and gradient-norm spikes. A step whose loss or
// pre-clip gradient norm sits more than `z` standard deviations above the
// mean of the last `window` applied steps (or is not finite) is a spike; the
// policy decides what happens to it:
//   skip         the update is not applied (the step's data is consumed and
//                recorded as skipped);
//   lr-cooldown  as skip, and the next cooldown_steps steps run at a learning
//                rate scaled by cooldown_factor, recovering linearly;
//   rollback     the newest checkpoint is restored and the data from it up to
//                and including the spike is skipped (PaLM's recipe).
// Loss and norm are global values (reduced over ranks), so every rank takes
// the same decision; the guard's state is part of the checkpoint, so a
// resumed run decides exactly as the uninterrupted one.
#pragma once
#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace mt {

class ConfigSchema;

enum class SpikePolicy { kOff, kSkip, kLrCooldown, kRollback };

struct SpikeConfig {
  SpikePolicy policy = SpikePolicy::kOff;
  int64_t window = 50;           // applied steps in the baseline
  int64_t min_history = 50;      // no verdicts before this many (early training moves fast)
  double z = 6.0;                // spike threshold, in standard deviations above the mean
  double cooldown_factor = 0.1;  // lr-cooldown: lr scale right after the spike
  int64_t cooldown_steps = 50;   // lr-cooldown: steps to recover to the schedule
  int64_t max_in_a_row = 5;      // this many spikes in a row stop the run (the data is not the problem)
};

void declare_keys(ConfigSchema& s, SpikeConfig& c);
const char* spike_policy_name(SpikePolicy p);

struct SpikeVerdict {
  bool spike = false;
  double loss_z = 0, norm_z = 0;  // z-scores against the baseline (0 before min_history)
  std::string why;                // "loss z = 9.1", "gradient norm is nan", ...
};

class SpikeGuard {
 public:
  explicit SpikeGuard(const SpikeConfig& c = {}) : c_(c) {}
  // The verdict on a step about to be applied (never a spike when off,
  // except for a non-finite value, which no policy lets through).
  SpikeVerdict check(double loss, double grad_norm) const;
  // An applied step joins the baseline.
  void accept(double loss, double grad_norm);
  // lr-cooldown: the factor on the schedule's lr at 0-based step `step`.
  double lr_factor(int64_t step) const;
  void start_cooldown(int64_t from_step) { cooldown_from_ = from_step; }
  int64_t in_a_row = 0;          // consecutive spikes so far
  int64_t total = 0;             // spikes in the run

  nlohmann::json to_json() const;
  Status from_json(const nlohmann::json& j);
  const SpikeConfig& config() const { return c_; }

 private:
  SpikeConfig c_;
  std::deque<double> loss_, norm_;
  int64_t cooldown_from_ = -1;
};

}  // namespace mt
