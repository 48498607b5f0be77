// search.h — finding the mixture a fitted TargetModel predicts best, on the
// capped simplex. RegMix's recipe (Liu et al. 2024): draw many candidate
// mixtures around the natural distribution, predict each, and average the
// top_k best rather than trusting the single best (the regressor is least
// reliable exactly where it predicts an extreme). For log-linear models the
// objective sum_t lambda_t (c_t + exp(b_t + t_t . w)) is convex, so projected
// gradient descent from that average (Olmix) finds the model's own optimum.
// The lowest prediction among best candidate, average and refinement wins.
// Deterministic: candidates come from sample_mixtures with a seed of their own
// (never the proxies' seed), in fixed chunks.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mix/target_model.h"

namespace mt::mix {

// What the search returns: RegMix's average of the top_k candidates (stays
// among mixtures like the proxies', where the regressor was fitted), or the
// lowest prediction among best candidate, average and refinement (the
// model's own optimum, possibly at the simplex's edge).
enum class SearchChoice { kTopKAverage, kModelOptimum };

struct SearchOptions {
  SearchChoice choice = SearchChoice::kModelOptimum;
  int64_t candidates = 100000;  // mixtures drawn and predicted
  int64_t top_k = 100;          // best candidates averaged (clamped to candidates)
  double concentration = 1.0;   // of the candidates' Dirichlet (dirichlet.h)
  uint64_t seed = 1;            // candidates use seed ^ kSearchSeedSalt
  bool refine_gradient = true;  // log-linear models: projected gradient descent from the average
  int64_t gradient_steps = 500; // at most this many accepted steps
};

// Candidates are drawn with seed ^ this, so a search seeded like the proxies
// never re-draws the proxies' own mixtures.
inline constexpr uint64_t kSearchSeedSalt = 0x5eac4c4d1d5eed01ull;

struct SearchResult {
  std::vector<double> weights;  // (m) on the capped simplex
  double predicted = 0;         // model.predict(weights)
  std::string method;           // "best-candidate", "top-k-average" or "gradient-refined"
  // Every method's prediction, for reports (NaN where a method did not run).
  double best_candidate_predicted = 0;
  double top_k_average_predicted = 0;
  double refined_predicted = NAN;
  int64_t refine_steps = 0;     // accepted gradient steps
};

// center: the candidates' mean (natural distribution), cap: per-weight caps
// (sum >= 1); both of the model's width (MT_CHECK, as are options out of range).
SearchResult search_simplex(const TargetModel& model, const std::vector<double>& center,
                            const std::vector<double>& cap, const SearchOptions& opt);

// Value at w; writes the gradient into *grad (same length as w).
using SimplexObjective = std::function<double(const std::vector<double>& w, std::vector<double>* grad)>;

// Projected gradient descent on the capped simplex from w0 (projected first),
// with a backtracking step on the usual sufficient-decrease test
// f(w') <= f(w) + g.(w' - w) + |w' - w|^2 / (2 eta); the step grows again after
// each success, so the rate follows the local curvature. Stops after
// max_steps accepted steps or when a step moves no weight by more than 1e-13.
// *steps (if given) receives the number of accepted steps.
std::vector<double> minimize_on_capped_simplex(const SimplexObjective& f, const std::vector<double>& w0,
                                               const std::vector<double>& cap, int64_t max_steps,
                                               int64_t* steps = nullptr);

}  // namespace mt::mix
