// space.cpp — see space.h.
#include "sweep/space.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace mt {
namespace {

bool is_log(ParamScale s) { return s == ParamScale::kLog || s == ParamScale::kLogInt; }
double t(const SweepParam& p, double x) { return is_log(p.scale) ? std::log(x) : x; }
double t_inv(const SweepParam& p, double y) { return is_log(p.scale) ? std::exp(y) : y; }

}  // namespace

double to_unit(const SweepParam& p, double natural) {
  const double a = t(p, p.lo), b = t(p, p.hi);
  return b > a ? (t(p, natural) - a) / (b - a) : 0.0;
}

double from_unit(const SweepParam& p, double unit) {
  const double u = std::clamp(unit, 0.0, 1.0);
  const double x = t_inv(p, t(p, p.lo) + u * (t(p, p.hi) - t(p, p.lo)));
  switch (p.scale) {
    case ParamScale::kLogInt:
    case ParamScale::kLinearInt:
    case ParamScale::kChoice:
      return std::clamp(std::round(x), p.lo, p.hi);
    default:
      return std::clamp(x, p.lo, p.hi);
  }
}

std::string param_value_toml(const SweepParam& p, double natural) {
  switch (p.scale) {
    case ParamScale::kChoice: {
      const size_t i = size_t(std::clamp(std::round(natural), 0.0, double(p.choices.size()) - 1));
      MT_CHECK(i < p.choices.size(), "choice index {} of {}", i, p.choices.size());
      return p.choices[i];
    }
    case ParamScale::kLogInt:
    case ParamScale::kLinearInt:
      return fmt::format("{}", int64_t(std::llround(natural)));
    default:
      return fmt::format("{}", natural);  // shortest round-trip: the run trains with this very value
  }
}

}  // namespace mt
