// dirichlet.h — where the mixture search draws its candidate mixtures: the
// capped probability simplex, Dirichlet samples around a centre, and the
// Euclidean projection that makes a sample respect per-bucket caps (a bucket
// with little data cannot take much of the budget without repeating).
// Every draw is a pure function of (seed, index) through Philox (core/rng.h),
// so proxy k's mixture never depends on how many proxies were drawn, in what
// order or on how many threads.
#pragma once
#include <cstdint>
#include <vector>

namespace mt::mix {

// Euclidean projection of v onto {w : sum w = 1, 0 <= w_i <= cap_i}.
// Precondition (MT_CHECK): same sizes, caps >= 0 and sum cap >= 1. Exact up
// to rounding: the shift tau with sum clip(v_i - tau, 0, cap_i) = 1 is found
// on the sorted breakpoints, so the result respects every cap exactly.
std::vector<double> project_capped_simplex(const std::vector<double>& v, const std::vector<double>& cap);

// One draw from Dirichlet(alpha), as normalised Gamma(alpha_i) draws
// (Marsaglia & Tsang 2000; alpha < 1 through Gamma(alpha + 1) * U^(1/alpha)).
// Component i uses Philox stream `index`, counters (i << 32) + attempt, so the
// draw is a pure function of (seed, index). alpha_i = 0 gives w_i = 0 exactly;
// at least one alpha must be positive (MT_CHECK). Gammas are kept as logs and
// normalised like a softmax, so tiny alphas (whose Gammas underflow a double)
// still give a finite point on the simplex: nearly one-hot, never NaN.
std::vector<double> sample_dirichlet(const std::vector<double>& alpha, uint64_t seed, uint64_t index);

// `count` mixtures from Dirichlet(concentration * m * center), m =
// center.size(): concentration 1 gives alpha_i = m * center_i (mean = center,
// about as spread as Dirichlet(1, ..., 1) around the uniform point); larger
// concentrations stay closer to the centre. A sample that breaks a cap is
// projected onto the capped simplex; one that does not is left as drawn.
// Sample k is sample_dirichlet(alpha, seed, first_index + k) (then projected),
// so a batch can be drawn in chunks. center: >= 0, sums to 1; cap: one per
// bucket, sum >= 1 (both MT_CHECK: the caller validates user input).
std::vector<std::vector<double>> sample_mixtures(const std::vector<double>& center, const std::vector<double>& cap,
                                                 int64_t count, double concentration, uint64_t seed,
                                                 int64_t first_index = 0);

// True when w breaks no cap (w_i <= cap_i for all i).
bool within_caps(const std::vector<double>& w, const std::vector<double>& cap);

// w itself when it breaks no cap, else its projection onto the capped simplex.
std::vector<double> within_caps_or_projected(const std::vector<double>& w, const std::vector<double>& cap);

}  // namespace mt::mix
