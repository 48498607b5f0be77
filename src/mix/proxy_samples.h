// proxy_samples.h — the mixtures a search trains as proxies: draws from the
// Dirichlet around the centre, truncated to the caps by rejection, and kept
// at least a minimum distance from every proxy drawn before them. Clamping a
// draw onto the capped simplex (what the regressors' candidates may do,
// dirichlet.h) sends whole regions of draws to the same corner when caps
// bind, and a proxy that repeats another teaches the regressors nothing;
// here no two proxies can be closer than min_distance (L1), so none repeats.
//
// When the caps reject nearly every draw (they bind hard), a draw that
// rejection has not placed after max_rejections attempts is pulled along the
// segment from the caps' centre point c (c_i = cap_i / sum cap, strictly
// inside when the caps sum to more than 1) to the draw, to a random fraction
// of the way to where the segment leaves the capped simplex: always within
// the caps, and distinct draws stay distinct. Every attempt is a pure
// function of (seed, proxy, attempt), so proxy k's mixture depends only on
// the seed and the proxies before it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace mt::mix {

struct ProxySampleOptions {
  double concentration = 1.0;    // Dirichlet(concentration * m * center)
  double min_distance = 0.02;    // L1 distance every proxy keeps from every earlier one
  int64_t max_rejections = 256;  // draws over a cap before one is pulled inside
  int64_t max_attempts = 4096;   // draws per proxy before the region is declared full
  uint64_t seed = 0;
};

struct ProxySamples {
  std::vector<std::vector<double>> mixtures;
  int64_t draws = 0;             // Dirichlet draws made in all
  int64_t over_cap = 0;          // of them, over some cap (rejected or pulled inside)
  int64_t pulled_inside = 0;     // proxies placed by the pull (caps binding hard)
  int64_t too_close = 0;         // draws within min_distance of an earlier proxy
  double min_pair_distance = 0;  // the smallest L1 distance between two proxies (0 with fewer than 2)
  std::vector<double> lo, hi;    // per domain: the smallest and largest share among the proxies
  // The share of draws the caps accept: the room they leave around the centre.
  double cap_acceptance() const { return draws > 0 ? 1.0 - double(over_cap) / double(draws) : 1.0; }
};

// `count` proxies. Errors (naming the keys) when the region cannot hold
// `count` proxies min_distance apart within max_attempts draws each. center
// within the caps and summing to 1, caps summing to at least 1 (MT_CHECK:
// the caller validated them).
Result<ProxySamples> sample_proxies(const std::vector<double>& center, const std::vector<double>& cap, int64_t count,
                                    const ProxySampleOptions& opt);

// L1 distance between two mixtures.
double l1_distance(const std::vector<double>& a, const std::vector<double>& b);

// A draw over some cap pulled inside, as above: c + t (v - c) with t a
// fraction u in (0, 1] of the largest step that stays within the caps.
std::vector<double> pull_inside_caps(const std::vector<double>& v, const std::vector<double>& cap, double u);

// One line for the search's log and report: proxies, cap acceptance, pulls,
// the closest pair, and each domain's sampled range.
std::string describe(const ProxySamples& s, const std::vector<std::string>& domains);

}  // namespace mt::mix
