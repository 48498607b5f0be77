// power_law.cpp — see power_law.h.
#include "sweep/power_law.h"

#include <algorithm>
#include <tuple>
#include <utility>

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

// The fits of `resamples` bootstrap resamples (counter-based draws from
// `seed`), resamples with one distinct cost left out.
std::vector<PowerLawFit> bootstrap(const std::vector<double>& xs, const std::vector<double>& ys, int resamples,
                                   uint64_t seed) {
  std::vector<PowerLawFit> fits;
  for (int r = 0; r < resamples; ++r) {
    std::vector<double> x, y;
    for (size_t k = 0; k < xs.size(); ++k) {
      const size_t pick = size_t(philox_uniform(seed, 11ull << 40, uint64_t(r) * xs.size() + k) * double(xs.size()));
      x.push_back(xs[std::min(pick, xs.size() - 1)]);
      y.push_back(ys[std::min(pick, xs.size() - 1)]);
    }
    const PowerLawFit g = fit_logs(x, y);
    if (std::isfinite(g.b)) fits.push_back(g);
  }
  return fits;
}

// The 5% and 95% order statistics (NaN below 10 values).
std::pair<double, double> interval90(std::vector<double> v) {
  if (v.size() < 10) return {NAN, NAN};
  std::sort(v.begin(), v.end());
  return {v[size_t(0.05 * double(v.size() - 1))], v[size_t(0.95 * double(v.size() - 1))]};
}

void logs_of(const std::vector<double>& cost, const std::vector<double>& value, std::vector<double>& xs,
             std::vector<double>& ys) {
  for (size_t i = 0; i < cost.size(); ++i)
    if (cost[i] > 0 && value[i] > 0) {
      xs.push_back(std::log(cost[i]));
      ys.push_back(std::log(value[i]));
    }
}

}  // namespace

PowerLawFit fit_power_law(const std::vector<double>& cost, const std::vector<double>& value, int resamples,
                          uint64_t seed) {
  std::vector<double> xs, ys;
  logs_of(cost, value, xs, ys);
  PowerLawFit f = fit_logs(xs, ys);
  if (!std::isfinite(f.b) || resamples <= 0) return f;
  std::vector<double> bs;
  for (const PowerLawFit& g : bootstrap(xs, ys, resamples, seed)) bs.push_back(g.b);
  std::tie(f.b_lo, f.b_hi) = interval90(bs);
  return f;
}

std::vector<PowerLawPrediction> predict_power_law(const std::vector<double>& cost, const std::vector<double>& value,
                                                  const std::vector<double>& at, int resamples, uint64_t seed) {
  std::vector<double> xs, ys;
  logs_of(cost, value, xs, ys);
  const PowerLawFit f = fit_logs(xs, ys);
  const std::vector<PowerLawFit> boot =
      std::isfinite(f.b) ? bootstrap(xs, ys, resamples, seed) : std::vector<PowerLawFit>{};
  std::vector<PowerLawPrediction> out;
  for (double c : at) {
    PowerLawPrediction p;
    p.cost = c;
    if (std::isfinite(f.b)) p.value = f.a * std::pow(c, f.b);
    std::vector<double> v;
    for (const PowerLawFit& g : boot) v.push_back(g.a * std::pow(c, g.b));
    std::tie(p.lo, p.hi) = interval90(v);
    out.push_back(p);
  }
  return out;
}

}  // namespace mt
