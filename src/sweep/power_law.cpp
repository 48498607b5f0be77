// power_law.cpp — see power_law.h.
#include "sweep/power_law.h"

#include <algorithm>

#include "sweep/carbs.h"

namespace mt {

namespace {

// Least squares of log value on log cost.
PowerLawFit fit_logs(const std::vector<double>& xs, const std::vector<double>& ys) {
  PowerLawFit f;
  f.n = int64_t(xs.size());
  if (f.n < 3) return f;
  const double n = double(f.n);
  double mx = 0, my = 0;
  for (size_t i = 0; i < xs.size(); ++i) mx += xs[i] / n, my += ys[i] / n;
  double sxx = 0, sxy = 0, syy = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    sxx += (xs[i] - mx) * (xs[i] - mx);
    sxy += (xs[i] - mx) * (ys[i] - my);
    syy += (ys[i] - my) * (ys[i] - my);
  }
  if (sxx <= 1e-12) return f;
  f.b = sxy / sxx;
  f.a = std::exp(my - f.b * mx);
  f.r2 = syy > 0 ? sxy * sxy / (sxx * syy) : NAN;
  return f;
}

}  // namespace

PowerLawFit fit_power_law(const std::vector<double>& cost, const std::vector<double>& value, int resamples,
                          uint64_t seed) {
  std::vector<double> xs, ys;
  for (size_t i = 0; i < cost.size(); ++i)
    if (cost[i] > 0 && value[i] > 0) {
      xs.push_back(std::log(cost[i]));
      ys.push_back(std::log(value[i]));
    }
  PowerLawFit f = fit_logs(xs, ys);
  if (!std::isfinite(f.b) || resamples <= 0) return f;
  std::vector<double> bs;
  for (int r = 0; r < resamples; ++r) {
    std::vector<double> x, y;
    for (size_t k = 0; k < xs.size(); ++k) {
      const size_t pick = size_t(philox_uniform(seed, 11ull << 40, uint64_t(r) * xs.size() + k) * double(xs.size()));
      x.push_back(xs[std::min(pick, xs.size() - 1)]);
      y.push_back(ys[std::min(pick, xs.size() - 1)]);
    }
    const PowerLawFit g = fit_logs(x, y);
    if (std::isfinite(g.b)) bs.push_back(g.b);
  }
  if (bs.size() >= 10) {
    std::sort(bs.begin(), bs.end());
    f.b_lo = bs[size_t(0.05 * double(bs.size() - 1))];
    f.b_hi = bs[size_t(0.95 * double(bs.size() - 1))];
  }
  return f;
}

}  // namespace mt
