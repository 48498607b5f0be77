// power_law.h — value = a * cost^b fitted by least squares in logs: how a
// hyperparameter moves along a sweep's front (sweep/runner/sweep_run.h) and
// the benchmark's learning-rate exponent (sweep/benchmark.h).
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

namespace mt {

// The power law value = a * cost^b fitted (least squares in logs) over the
// front's runs, for one hyperparameter; n < 3 leaves b NaN.
struct PowerLawFit {
  double a = 0, b = NAN, r2 = NAN;
  double b_lo = NAN, b_hi = NAN;  // 90% interval of b over bootstrap resamples of the runs
  int64_t n = 0;
};
// `resamples` > 0: the interval from that many resamples with replacement
// (counter-based draws from `seed`; resamples with one distinct cost are skipped).
PowerLawFit fit_power_law(const std::vector<double>& cost, const std::vector<double>& value, int resamples = 0,
                          uint64_t seed = 0);

// The law's value at a cost, with its 90% interval over the same bootstrap
// resamples: the loss a sweep's front predicts for a cost it has not run.
struct PowerLawPrediction {
  double cost = 0, value = NAN, lo = NAN, hi = NAN;
};
std::vector<PowerLawPrediction> predict_power_law(const std::vector<double>& cost, const std::vector<double>& value,
                                                  const std::vector<double>& at, int resamples, uint64_t seed);

}  // namespace mt
