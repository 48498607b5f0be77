// dirichlet.cpp — see dirichlet.h.
#include "mix/dirichlet.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/rng.h"

namespace mt::mix {
namespace {

// A 32-bit Philox word as a double in (0, 1): core/rng.h's uniform01 returns a
// float, which rounds the largest words to exactly 1.0; the acceptance test
// and the alpha < 1 boost take logs, so keep the double.
double unit(uint32_t word) { return (double(word) + 0.5) * (1.0 / 4294967296.0); }

// sum_i clip(v_i - tau, 0, cap_i): non-increasing and piecewise linear in tau.
double clipped_sum(const std::vector<double>& v, const std::vector<double>& cap, double tau) {
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) s += std::clamp(v[i] - tau, 0.0, cap[i]);
  return s;
}

// log of one Gamma(alpha, 1) draw (Marsaglia & Tsang 2000, "A simple method
// for generating gamma variables"); alpha > 0. One Philox block per attempt:
// words 0-1 make the normal (Box-Muller), word 2 the acceptance uniform, and
// word 3 of the accepted block the U of the alpha < 1 boost (independent of
// the words that decided acceptance, so still uniform).
double log_gamma_draw(double alpha, uint64_t seed, uint64_t stream, uint64_t component) {
  const double a = alpha < 1 ? alpha + 1 : alpha;
  const double d = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  uint32_t w[4];
  // Acceptance is above 95% for every a >= 1: the counter's low word never wraps.
  for (uint64_t attempt = 0;; ++attempt) {
    MT_CHECK(attempt < 0xFFFFFFFFull, "Marsaglia-Tsang did not accept for alpha = {}", alpha);
    philox_block(seed, stream, (component << 32) + attempt, w);
    const double x = std::sqrt(-2.0 * std::log(unit(w[0]))) * std::cos(2.0 * M_PI * unit(w[1]));
    const double v1 = 1.0 + c * x;
    if (v1 <= 0) continue;
    const double v = v1 * v1 * v1, u = unit(w[2]), x2 = x * x;
    // The squeeze accepts ~98% of draws without the logarithms of the full test.
    if (u < 1.0 - 0.0331 * x2 * x2 || std::log(u) < 0.5 * x2 + d - d * v + d * std::log(v)) {
      double log_g = std::log(d * v);
      if (alpha < 1) log_g += std::log(unit(w[3])) / alpha;  // Gamma(alpha) = Gamma(alpha + 1) U^(1/alpha)
      return log_g;
    }
  }
}

// The shift tau on the sorted breakpoints of clipped_sum, v_i - cap_i and
// v_i: at the smallest it is sum cap >= 1, at the largest 0. Binary search
// for the last breakpoint where it is still >= 1; between that one and the
// next it is linear. Always exact; O(m log m).
double tau_by_sorting(const std::vector<double>& v, const std::vector<double>& cap) {
  const size_t m = v.size();
  std::vector<double> bp;
  bp.reserve(2 * m);
  for (size_t i = 0; i < m; ++i) {
    bp.push_back(v[i] - cap[i]);
    bp.push_back(v[i]);
  }
  std::sort(bp.begin(), bp.end());
  // (When sum cap is a rounding error below 1, g(bp[0]) < 1 and tau = bp[0]
  // gives w = cap, the right answer.)
  size_t lo = 0, hi = bp.size() - 1;  // g(bp[lo]) >= 1 > g(bp[hi]) = 0
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    (clipped_sum(v, cap, bp[mid]) >= 1 ? lo : hi) = mid;
  }
  double tau = bp[lo];
  const double g_lo = clipped_sum(v, cap, bp[lo]);
  if (g_lo > 1) {
    const double g_hi = clipped_sum(v, cap, bp[hi]);
    tau = bp[lo] + (g_lo - 1) / (g_lo - g_hi) * (bp[hi] - bp[lo]);
  }
  return tau;
}

// Newton's method on tau inside a shrinking bracket. Between breakpoints the
// sets of zero, free and capped weights do not change and clipped_sum is
// linear, so a step from tau lands on the root of tau's segment; once that is
// the right segment the next step gives tau back exactly. A sample a little
// over its caps needs two or three passes of O(m), where sorting the 2m
// breakpoints costs ~10x more at m = 200 (measured). False when it has not
// settled (ties at a breakpoint can make it alternate); the caller then sorts.
bool tau_by_newton(const std::vector<double>& v, const std::vector<double>& cap, double* tau_out) {
  const size_t m = v.size();
  double lo = INFINITY, hi = -INFINITY, sum = 0;  // clipped_sum(lo) = sum cap >= 1 > clipped_sum(hi) = 0
  for (size_t i = 0; i < m; ++i) {
    lo = std::min(lo, v[i] - cap[i]);
    hi = std::max(hi, v[i]);
    sum += v[i];
  }
  double tau = std::clamp((sum - 1) / double(m), lo, hi);  // the answer when nothing clips
  for (int it = 0; it < 64; ++it) {
    double g = 0, free_v = 0, capped = 0;
    int64_t free_n = 0;
    for (size_t i = 0; i < m; ++i) {
      const double d = v[i] - tau;
      if (d >= cap[i]) {
        capped += cap[i];
      } else if (d > 0) {
        free_v += v[i];
        ++free_n;
      }
    }
    g = capped + free_v - double(free_n) * tau;
    if (g == 1) break;
    (g > 1 ? lo : hi) = tau;
    double next = free_n > 0 ? (free_v + capped - 1) / double(free_n) : 0.5 * (lo + hi);
    if (next == tau) break;
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    tau = next;
    if (it == 63) return false;
  }
  *tau_out = tau;
  return true;
}

}  // namespace

std::vector<double> project_capped_simplex(const std::vector<double>& v, const std::vector<double>& cap) {
  const size_t m = v.size();
  MT_CHECK(m > 0 && cap.size() == m, "v has {} entries, cap {}", m, cap.size());
  double cap_sum = 0;
  for (size_t i = 0; i < m; ++i) {
    MT_CHECK(cap[i] >= 0 && std::isfinite(v[i]), "entry {}: v = {}, cap = {}", i, v[i], cap[i]);
    cap_sum += cap[i];
  }
  MT_CHECK(cap_sum >= 1 - 1e-12, "caps sum to {} < 1: the capped simplex is empty", cap_sum);
  double tau = 0;
  if (!tau_by_newton(v, cap, &tau)) tau = tau_by_sorting(v, cap);
  std::vector<double> w(m);
  for (size_t i = 0; i < m; ++i) w[i] = std::clamp(v[i] - tau, 0.0, cap[i]);
  return w;
}

std::vector<double> sample_dirichlet(const std::vector<double>& alpha, uint64_t seed, uint64_t index) {
  const size_t m = alpha.size();
  MT_CHECK(m > 0 && m < (size_t(1) << 32), "alpha has {} entries", m);
  std::vector<double> log_g(m, -INFINITY);
  double top = -INFINITY;
  for (size_t i = 0; i < m; ++i) {
    MT_CHECK(alpha[i] >= 0 && std::isfinite(alpha[i]), "alpha[{}] = {}", i, alpha[i]);
    if (alpha[i] > 0) log_g[i] = log_gamma_draw(alpha[i], seed, index, uint64_t(i));
    top = std::max(top, log_g[i]);
  }
  MT_CHECK(std::isfinite(top), "every alpha is 0 (or every Gamma draw underflowed past -inf)");
  // Softmax of the log-Gammas: the largest maps to 1 before normalising, so the
  // sum is >= 1 and no tiny alpha can turn it into 0/0.
  std::vector<double> w(m, 0.0);
  double sum = 0;
  for (size_t i = 0; i < m; ++i) sum += (w[i] = std::exp(log_g[i] - top));
  for (double& x : w) x /= sum;
  return w;
}

bool within_caps(const std::vector<double>& w, const std::vector<double>& cap) {
  MT_CHECK(w.size() == cap.size(), "w has {} entries, cap {}", w.size(), cap.size());
  for (size_t i = 0; i < w.size(); ++i)
    if (w[i] > cap[i]) return false;
  return true;
}

std::vector<double> within_caps_or_projected(const std::vector<double>& w, const std::vector<double>& cap) {
  return within_caps(w, cap) ? w : project_capped_simplex(w, cap);
}

std::vector<std::vector<double>> sample_mixtures(const std::vector<double>& center, const std::vector<double>& cap,
                                                 int64_t count, double concentration, uint64_t seed,
                                                 int64_t first_index) {
  const size_t m = center.size();
  MT_CHECK(m > 0 && cap.size() == m, "center has {} entries, cap {}", m, cap.size());
  MT_CHECK(count >= 0 && first_index >= 0, "count = {}, first_index = {}", count, first_index);
  MT_CHECK(concentration > 0 && std::isfinite(concentration), "concentration = {}", concentration);
  double sum = 0, cap_sum = 0;
  for (size_t i = 0; i < m; ++i) {
    MT_CHECK(center[i] >= 0 && std::isfinite(center[i]), "center[{}] = {}", i, center[i]);
    sum += center[i];
    cap_sum += cap[i];
  }
  MT_CHECK(std::fabs(sum - 1) < 1e-6, "center sums to {}, not 1", sum);
  MT_CHECK(cap_sum >= 1 - 1e-12, "caps sum to {} < 1", cap_sum);
  std::vector<double> alpha(m);
  for (size_t i = 0; i < m; ++i) alpha[i] = concentration * double(m) * center[i];
  std::vector<std::vector<double>> out(static_cast<size_t>(count));
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < count; ++k) {
    std::vector<double> w = sample_dirichlet(alpha, seed, uint64_t(first_index + k));
    out[size_t(k)] = within_caps(w, cap) ? std::move(w) : project_capped_simplex(w, cap);
  }
  return out;
}

}  // namespace mt::mix
