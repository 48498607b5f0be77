// noise.cpp — see noise.h.
#include "mix/noise.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/rng.h"
#include "mix/target_model.h"

namespace mt::mix {

namespace {

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}

// Sample variance (n - 1), or NaN below two values.
double variance_of(const std::vector<double>& v) {
  if (v.size() < 2) return NAN;
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / double(v.size() - 1);
}

// The q-quantile of sorted values, linearly interpolated.
double quantile(const std::vector<double>& sorted, double q) {
  const double at = q * double(sorted.size() - 1);
  const size_t i = size_t(at);
  const double f = at - double(i);
  return i + 1 < sorted.size() ? sorted[i] * (1 - f) + sorted[i + 1] * f : sorted[i];
}

}  // namespace

double replicate_sd(const std::vector<std::pair<double, double>>& pairs) {
  if (pairs.empty()) return NAN;
  double s = 0;
  for (const auto& [a, b] : pairs) s += (a - b) * (a - b);
  return std::sqrt(s / (2.0 * double(pairs.size())));
}

Result<GainInterval> bootstrap_gain(RegressorKind kind, const std::vector<std::vector<double>>& X,
                                    const std::vector<std::vector<double>>& Y, const std::vector<double>& lambda,
                                    uint64_t seed, const std::vector<double>& natural,
                                    const std::vector<double>& chosen, int64_t resamples) {
  GainInterval g;
  TargetModel whole;
  MT_RETURN_IF_ERROR(whole.fit(kind, X, Y, lambda, seed));
  g.predicted = whole.predict(natural) - whole.predict(chosen);
  std::vector<double> gains;
  const size_t K = X.size();
  for (int64_t r = 0; r < resamples; ++r) {
    std::vector<std::vector<double>> Xr, Yr;
    for (size_t i = 0; i < K; ++i) {
      const size_t pick = size_t(philox_u64(seed, uint64_t(r), uint64_t(i)) % K);
      Xr.push_back(X[pick]);
      Yr.push_back(Y[pick]);
    }
    TargetModel m;
    if (!m.fit(kind, Xr, Yr, lambda, seed)) continue;  // a degenerate resample (e.g. one distinct row)
    gains.push_back(m.predict(natural) - m.predict(chosen));
  }
  g.resamples = int64_t(gains.size());
  if (gains.empty()) {
    g.lo = g.hi = g.predicted;
    return g;
  }
  std::sort(gains.begin(), gains.end());
  g.lo = quantile(gains, 0.05);
  g.hi = quantile(gains, 0.95);
  return g;
}

MixtureChoice choose_mixture(const GainInterval& gain, double noise_sd) {
  MixtureChoice c;
  const std::string interval =
      fmt::format("predicted gain over natural {:.4f}, 90% interval [{:.4f}, {:.4f}] over {} bootstrap refits",
                  gain.predicted, gain.lo, gain.hi, gain.resamples);
  if (gain.lo <= 0) {
    c.keep_natural = true;
    c.reason = interval + ": the interval reaches no gain, so the natural mixture is kept";
  } else if (std::isfinite(noise_sd) && gain.predicted < noise_sd) {
    c.keep_natural = true;
    c.reason = fmt::format(
        "{}: smaller than one run's seed-to-seed standard deviation {:.4f}, so the natural "
        "mixture is kept",
        interval, noise_sd);
  } else {
    c.reason = interval + (std::isfinite(noise_sd)
                               ? fmt::format(", above the seed-to-seed standard deviation {:.4f}", noise_sd)
                               : std::string(" (seed noise not measured: search.replicates = 0)"));
  }
  return c;
}

SeedDifference seed_difference(const std::vector<double>& a, const std::vector<double>& b, double noise_sd) {
  SeedDifference d;
  d.n_a = int64_t(a.size());
  d.n_b = int64_t(b.size());
  if (a.empty() || b.empty()) {
    d.mean = d.std_error = NAN;
    return d;
  }
  d.mean = mean_of(a) - mean_of(b);
  auto var = [&](const std::vector<double>& v) {
    const double s = variance_of(v);
    return std::isfinite(s) ? s : noise_sd * noise_sd;  // one seed: the replicates' noise, or NaN
  };
  d.std_error = std::sqrt(var(a) / double(a.size()) + var(b) / double(b.size()));
  return d;
}

}  // namespace mt::mix
