// noise.h — what the mixture search knows about its own noise: the
// seed-to-seed spread of a proxy's target (the same mixture trained with
// two seeds), an interval on the gain the fitted regressor predicts for its
// choice over the natural mixture (the regressor refitted on bootstrap
// resamples of the proxies), the rule that keeps the natural mixture unless
// that gain is clear of both, and the difference of trained seeds with its
// standard error (`verify`). A search that cannot tell a real gain from
// noise says so instead of choosing a "better" mixture that trains worse.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "mix/regressor.h"

namespace mt::mix {

// The standard deviation of one run's target from pairs (a_i, b_i) of one
// mixture trained with two seeds: sqrt(sum (a_i - b_i)^2 / (2 n)). NaN
// without pairs.
double replicate_sd(const std::vector<std::pair<double, double>>& pairs);

// The predicted gain predict(natural) - predict(chosen) (positive: the
// chosen mixture's target is lower), and its interval: the 5th and 95th
// percentiles over `resamples` refits on bootstrap resamples of the
// proxies (X, Y rows drawn with replacement; resample r from Philox stream
// r of seed), the chosen mixture held fixed.
struct GainInterval {
  double predicted = 0, lo = 0, hi = 0;
  int64_t resamples = 0;
};
Result<GainInterval> bootstrap_gain(RegressorKind kind, const std::vector<std::vector<double>>& X,
                                    const std::vector<std::vector<double>>& Y, const std::vector<double>& lambda,
                                    uint64_t seed, const std::vector<double>& natural,
                                    const std::vector<double>& chosen, int64_t resamples);

// The rule: keep the natural mixture when the gain's interval reaches 0 or
// below, or when the predicted gain is smaller than one run's seed-to-seed
// standard deviation (noise_sd; NaN = not measured, no such test).
struct MixtureChoice {
  bool keep_natural = false;
  std::string reason;  // one sentence, for the log and search.json
};
MixtureChoice choose_mixture(const GainInterval& gain, double noise_sd);

// Trained seeds of two mixtures: mean(a) - mean(b) and its standard error,
// from each side's sample variance (with 2+ seeds) or the replicate noise
// (NaN when neither is known).
struct SeedDifference {
  double mean = 0, std_error = 0;
  int64_t n_a = 0, n_b = 0;
};
SeedDifference seed_difference(const std::vector<double>& a, const std::vector<double>& b, double noise_sd);

}  // namespace mt::mix
