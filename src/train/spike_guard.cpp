// spike_guard.cpp — see spike_guard.h.
#include "train/spike_guard.h"

#include <fmt/format.h>

#include <cmath>

#include "core/config_schema.h"

namespace mt {

void declare_keys(ConfigSchema& s, SpikeConfig& c) {
  s.add_enum("spike.policy", &c.policy, {"off", "skip", "lr-cooldown", "rollback"},
             "what a loss or gradient-norm spike does: nothing, skip the update, skip it and cool the lr down, or "
             "restore the last checkpoint and skip the data since");
  s.add("spike.window", &c.window, "applied steps in the baseline").range(2, 100000).unit("steps");
  s.add("spike.min_history", &c.min_history, "no verdict before this many applied steps").range(2, 100000).unit("steps");
  s.add("spike.z", &c.z, "spike threshold above the baseline mean").above(0).unit("standard deviations");
  s.add("spike.cooldown_factor", &c.cooldown_factor, "lr-cooldown: lr scale right after a spike").range(0, 1);
  s.add("spike.cooldown_steps", &c.cooldown_steps, "lr-cooldown: steps back to the schedule").range(1, 1000000).unit("steps");
  s.add("spike.max_in_a_row", &c.max_in_a_row, "consecutive spikes that stop the run").range(1, 1000000);
}

const char* spike_policy_name(SpikePolicy p) {
  switch (p) {
    case SpikePolicy::kOff: return "off";
    case SpikePolicy::kSkip: return "skip";
    case SpikePolicy::kLrCooldown: return "lr-cooldown";
    case SpikePolicy::kRollback: return "rollback";
  }
  return "?";
}

namespace {

// z of x against the values: (x - mean) / std, with a floor on std so a
// perfectly flat baseline does not turn rounding into a spike.
double z_score(const std::deque<double>& v, double x) {
  double mean = 0;
  for (double y : v) mean += y / double(v.size());
  double var = 0;
  for (double y : v) var += (y - mean) * (y - mean) / double(v.size());
  const double sd = std::max(std::sqrt(var), 1e-3 * std::abs(mean) + 1e-12);
  return (x - mean) / sd;
}

}  // namespace

SpikeVerdict SpikeGuard::check(double loss, double grad_norm) const {
  SpikeVerdict v;
  if (!std::isfinite(loss) || !std::isfinite(grad_norm)) {
    v.spike = true;
    v.why = !std::isfinite(loss) ? fmt::format("loss is {}", loss) : fmt::format("gradient norm is {}", grad_norm);
    return v;
  }
  if (c_.policy == SpikePolicy::kOff || int64_t(loss_.size()) < c_.min_history) return v;
  v.loss_z = z_score(loss_, loss);
  v.norm_z = z_score(norm_, grad_norm);
  if (v.loss_z > c_.z || v.norm_z > c_.z) {
    v.spike = true;
    v.why = v.loss_z > c_.z ? fmt::format("loss {:.4g} is {:.1f} standard deviations above the last {} steps", loss,
                                          v.loss_z, loss_.size())
                            : fmt::format("gradient norm {:.4g} is {:.1f} standard deviations above the last {} steps",
                                          grad_norm, v.norm_z, norm_.size());
  }
  return v;
}

void SpikeGuard::accept(double loss, double grad_norm) {
  loss_.push_back(loss);
  norm_.push_back(grad_norm);
  while (int64_t(loss_.size()) > c_.window) loss_.pop_front(), norm_.pop_front();
  in_a_row = 0;
}

double SpikeGuard::lr_factor(int64_t step) const {
  if (c_.policy != SpikePolicy::kLrCooldown || cooldown_from_ < 0 || step < cooldown_from_) return 1.0;
  const double t = double(step - cooldown_from_) / double(c_.cooldown_steps);
  if (t >= 1.0) return 1.0;
  return c_.cooldown_factor + (1.0 - c_.cooldown_factor) * t;
}

nlohmann::json SpikeGuard::to_json() const {
  return {{"loss", std::vector<double>(loss_.begin(), loss_.end())},
          {"grad_norm", std::vector<double>(norm_.begin(), norm_.end())},
          {"cooldown_from", cooldown_from_},
          {"in_a_row", in_a_row},
          {"total", total}};
}

Status SpikeGuard::from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("loss") || !j.contains("grad_norm"))
    return Status::error("spike guard state: missing fields");
  const auto l = j["loss"].get<std::vector<double>>(), n = j["grad_norm"].get<std::vector<double>>();
  loss_.assign(l.begin(), l.end());
  norm_.assign(n.begin(), n.end());
  cooldown_from_ = j.value("cooldown_from", int64_t(-1));
  in_a_row = j.value("in_a_row", int64_t(0));
  total = j.value("total", int64_t(0));
  return Status::ok();
}

}  // namespace mt
