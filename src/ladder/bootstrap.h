// bootstrap.h — the nonparametric bootstrap (Efron 1979) as Besiroglu et al.
// (2024) used it for the scaling-law fit: resample the runs with replacement,
// refit, and read standard errors and percentile intervals off the refits.
// Resample b is a pure function of (seed, b) through Philox (core/rng.h), so
// results do not depend on thread count or on how many resamples are drawn.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

namespace mt::ladder {

struct BootstrapOptions {
  int64_t resamples = 0;  // B; 0 = no bootstrap (no standard errors or intervals)
  uint64_t seed = 0;      // Philox key
  double level = 0.95;    // two-sided percentile interval
};

// n row indices drawn uniformly with replacement from [0, n), for resample b.
std::vector<int64_t> resample_indices(int64_t n, uint64_t seed, int64_t b);

// Calls fn(b, resample_indices(n, seed, b)) for b in [0, B), in parallel;
// fn must only write state owned by resample b.
void for_each_resample(int64_t n, const BootstrapOptions& opt,
                       const std::function<void(int64_t b, const std::vector<int64_t>& idx)>& fn);

// A point estimate with its bootstrap spread.
struct Estimate {
  double value = 0;           // from the fit to all runs
  double se = NAN;            // standard deviation of the bootstrap values (NaN without them)
  double lo = NAN, hi = NAN;  // percentile interval at the options' level
  int64_t resamples = 0;      // finite bootstrap values that went into se, lo, hi
};

// `samples` may hold non-finite values (a refit without an answer); they are
// left out and the count of those kept is reported.
Estimate summarize(double value, std::vector<double> samples, double level);

}  // namespace mt::ladder
