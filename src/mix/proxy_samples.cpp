// proxy_samples.cpp — see proxy_samples.h.
#include "mix/proxy_samples.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/rng.h"
#include "mix/dirichlet.h"

namespace mt::mix {

namespace {

constexpr uint64_t kPullSalt = 0x7075'6c6c'696e'7369ull;  // the pull's uniforms: apart from the draws' streams
constexpr int kAttemptBits = 24;                          // draw `a` of proxy k is stream (k << 24) + a

}  // namespace

double l1_distance(const std::vector<double>& a, const std::vector<double>& b) {
  MT_CHECK(a.size() == b.size(), "mixtures of {} and {} domains", a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d += std::fabs(a[i] - b[i]);
  return d;
}

std::vector<double> pull_inside_caps(const std::vector<double>& v, const std::vector<double>& cap, double u) {
  MT_CHECK(v.size() == cap.size() && u > 0 && u <= 1, "pull of {} shares, {} caps, u = {}", v.size(), cap.size(), u);
  double S = 0;
  for (double c : cap) S += c;
  std::vector<double> c(cap.size());
  for (size_t i = 0; i < cap.size(); ++i) c[i] = cap[i] / S;
  // The largest step from c toward v that keeps every share within its cap
  // (shares stay >= 0 and sum to 1 on the whole segment: both ends do).
  double t = 1;
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] > c[i]) t = std::min(t, (cap[i] - c[i]) / (v[i] - c[i]));
  t *= u;
  std::vector<double> w(v.size());
  for (size_t i = 0; i < v.size(); ++i) w[i] = std::clamp(c[i] + t * (v[i] - c[i]), 0.0, cap[i]);
  return w;
}

Result<ProxySamples> sample_proxies(const std::vector<double>& center, const std::vector<double>& cap, int64_t count,
                                    const ProxySampleOptions& opt) {
  const size_t m = center.size();
  MT_CHECK(m > 0 && cap.size() == m && count >= 0, "center {}, cap {}, count {}", m, cap.size(), count);
  MT_CHECK(opt.max_attempts >= 1 && opt.max_attempts < (int64_t(1) << kAttemptBits) && opt.max_rejections >= 0,
           "max_attempts {}, max_rejections {}", opt.max_attempts, opt.max_rejections);
  std::vector<double> alpha(m);
  for (size_t i = 0; i < m; ++i) alpha[i] = opt.concentration * double(m) * center[i];
  ProxySamples s;
  s.lo.assign(m, 1.0);
  s.hi.assign(m, 0.0);
  s.min_pair_distance = count >= 2 ? INFINITY : 0.0;
  for (int64_t k = 0; k < count; ++k) {
    bool placed = false;
    int64_t over = 0;
    for (int64_t a = 0; a < opt.max_attempts && !placed; ++a) {
      const uint64_t stream = (uint64_t(k) << kAttemptBits) + uint64_t(a);
      std::vector<double> w = sample_dirichlet(alpha, opt.seed, stream);
      ++s.draws;
      bool pulled = false;
      if (!within_caps(w, cap)) {
        ++s.over_cap;
        if (++over <= opt.max_rejections) continue;
        uint32_t word[4];
        philox_block(opt.seed ^ kPullSalt, stream, 0, word);
        w = pull_inside_caps(w, cap, double(uniform01(word[0])));
        pulled = true;
      }
      double nearest = INFINITY;
      for (const std::vector<double>& p : s.mixtures) nearest = std::min(nearest, l1_distance(w, p));
      if (nearest < opt.min_distance) {
        ++s.too_close;
        continue;
      }
      s.min_pair_distance = std::min(s.min_pair_distance, nearest);
      s.pulled_inside += pulled ? 1 : 0;
      for (size_t i = 0; i < m; ++i) {
        s.lo[i] = std::min(s.lo[i], w[i]);
        s.hi[i] = std::max(s.hi[i], w[i]);
      }
      s.mixtures.push_back(std::move(w));
      placed = true;
    }
    if (!placed)
      return Status::errorf(
          "search.proxies: the capped region around the centre holds only {} proxies at least "
          "search.min_distance = {} apart ({} draws for proxy {}; {:.1f}% of all draws were over a cap): fewer "
          "proxies, a smaller search.min_distance, or a lower search.concentration to spread them",
          k, opt.min_distance, opt.max_attempts, k, 100.0 * (1.0 - s.cap_acceptance()));
  }
  return s;
}

std::string describe(const ProxySamples& s, const std::vector<std::string>& domains) {
  std::string ranges;
  for (size_t i = 0; i < domains.size() && i < s.lo.size(); ++i)
    ranges += fmt::format("{}{} {:.3f}-{:.3f}", i ? ", " : "", domains[i], s.lo[i], s.hi[i]);
  return fmt::format(
      "{} distinct proxies (closest pair {:.3f} apart, L1); the caps accepted {:.1f}% of {} draws{}; shares sampled: "
      "{}",
      s.mixtures.size(), s.min_pair_distance, 100.0 * s.cap_acceptance(), s.draws,
      s.pulled_inside > 0 ? fmt::format(", {} proxies pulled inside them", s.pulled_inside) : "", ranges);
}

}  // namespace mt::mix
