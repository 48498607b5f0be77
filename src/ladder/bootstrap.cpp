// bootstrap.cpp — see bootstrap.h.
#include "ladder/bootstrap.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/rng.h"

namespace mt::ladder {

std::vector<int64_t> resample_indices(int64_t n, uint64_t seed, int64_t b) {
  MT_CHECK(n > 0 && n <= (int64_t(1) << 32), "n = {}", n);
  std::vector<int64_t> idx(size_t(n), 0);
  uint32_t w[4];
  for (int64_t j = 0; j < n; ++j) {
    if (j % 4 == 0) philox_block(seed, uint64_t(b), uint64_t(j / 4), w);
    // Multiply-shift maps a 32-bit word onto [0, n); its bias, below n / 2^32,
    // is far under the bootstrap's own noise.
    idx[size_t(j)] = int64_t((uint64_t(w[j % 4]) * uint64_t(n)) >> 32);
  }
  return idx;
}

void for_each_resample(int64_t n, const BootstrapOptions& opt,
                       const std::function<void(int64_t, const std::vector<int64_t>&)>& fn) {
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t b = 0; b < opt.resamples; ++b) fn(b, resample_indices(n, opt.seed, b));
}

namespace {
// Linear interpolation between order statistics (numpy's default quantile).
double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * double(sorted.size() - 1);
  const size_t i = size_t(std::floor(pos));
  if (i + 1 >= sorted.size()) return sorted.back();
  return sorted[i] + (pos - double(i)) * (sorted[i + 1] - sorted[i]);
}
}  // namespace

Estimate summarize(double value, std::vector<double> samples, double level) {
  Estimate e;
  e.value = value;
  samples.erase(std::remove_if(samples.begin(), samples.end(), [](double v) { return !std::isfinite(v); }),
                samples.end());
  e.resamples = int64_t(samples.size());
  if (samples.size() < 2) return e;
  double mean = 0;
  for (double v : samples) mean += v;
  mean /= double(samples.size());
  double ss = 0;
  for (double v : samples) ss += (v - mean) * (v - mean);
  e.se = std::sqrt(ss / double(samples.size() - 1));
  std::sort(samples.begin(), samples.end());
  e.lo = quantile(samples, 0.5 * (1 - level));
  e.hi = quantile(samples, 1 - 0.5 * (1 - level));
  return e;
}

}  // namespace mt::ladder
