// space.h — a sweep's search space: each hyperparameter is a run key with a
// scale (log-uniform, uniform, integer, choice), bounds, the point the search
// starts around and the width of its search distribution. The search works
// in unit coordinates: u = (t(x) - t(lo)) / (t(hi) - t(lo)) with t = ln on
// log scales, so a GP length scale or a search radius means the same on
// every axis; a choice of k values is the index / (k - 1).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mt {

enum class ParamScale { kLog, kLinear, kLogInt, kLinearInt, kChoice };

struct SweepParam {
  std::string key;  // run key, e.g. "train.lr"
  ParamScale scale = ParamScale::kLog;
  double lo = 0, hi = 1;             // bounds (natural units); a choice: 0 and k - 1
  double center = 0;                 // where the search starts (natural units; a choice: its index)
  double radius = 0.15;              // std of the search distribution, unit coordinates
  std::vector<std::string> choices;  // kChoice: the values, as TOML
};

// Natural value <-> unit coordinate; from_unit clamps to [0, 1] and rounds
// integers and choices to the nearest allowed value.
double to_unit(const SweepParam& p, double natural);
double from_unit(const SweepParam& p, double unit);
// The TOML spelling of a natural value of `p` ("3e-4", "512", "\"muon\"").
std::string param_value_toml(const SweepParam& p, double natural);

}  // namespace mt
