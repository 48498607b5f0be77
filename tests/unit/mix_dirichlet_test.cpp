// mix_dirichlet_test.cpp — the capped-simplex projection is the Euclidean
// projection (feasible, closest, equal to an independent bisection), and the
// Dirichlet samples have the right moments, respect caps exactly, are pure
// functions of (seed, index) and stay finite for tiny alphas.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "mix/dirichlet.h"
#include "support/random.h"

namespace mt::mix {
namespace {

using mt::testing::rand_u32;

double u01(uint64_t seed, uint64_t stream, uint64_t i) { return (rand_u32(seed, stream, i) + 0.5) / 4294967296.0; }

double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

// Independent reference: bisection on tau to 1e-15.
std::vector<double> bisect_projection(const std::vector<double>& v, const std::vector<double>& cap) {
  double lo = -10, hi = 10;
  auto g = [&](double tau) {
    double s = 0;
    for (size_t i = 0; i < v.size(); ++i) s += std::clamp(v[i] - tau, 0.0, cap[i]);
    return s;
  };
  for (int it = 0; it < 200; ++it) {
    const double mid = 0.5 * (lo + hi);
    (g(mid) >= 1 ? lo : hi) = mid;
  }
  std::vector<double> w(v.size());
  for (size_t i = 0; i < v.size(); ++i) w[i] = std::clamp(v[i] - lo, 0.0, cap[i]);
  return w;
}

double dist2(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d += (a[i] - b[i]) * (a[i] - b[i]);
  return d;
}

TEST(MixProjection, HandCases) {
  for (double x : project_capped_simplex({0.5, 0.5, 0.5}, {1, 1, 1})) EXPECT_NEAR(x, 1.0 / 3, 1e-16);
  const std::vector<double> w = project_capped_simplex({1, 0, 0}, {0.5, 1, 1});
  EXPECT_DOUBLE_EQ(w[0], 0.5);
  EXPECT_DOUBLE_EQ(w[1], 0.25);
  EXPECT_DOUBLE_EQ(w[2], 0.25);
  // Caps summing to exactly 1 leave one feasible point: the caps.
  EXPECT_EQ(project_capped_simplex({5, -3, 0.1}, {0.25, 0.5, 0.25}), (std::vector<double>{0.25, 0.5, 0.25}));
  // A feasible point is its own projection.
  const std::vector<double> p = {0.1, 0.2, 0.3, 0.4};
  const std::vector<double> q = project_capped_simplex(p, {0.5, 0.5, 0.5, 0.5});
  for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(q[i], p[i], 1e-15);
}

TEST(MixProjection, FeasibleClosestAndEqualToBisection) {
  for (uint64_t c = 0; c < 300; ++c) {
    const size_t m = 2 + c % 9;
    std::vector<double> v(m), cap(m);
    for (size_t i = 0; i < m; ++i) {
      v[i] = 3 * (u01(c, 0, i) - 0.5);
      cap[i] = u01(c, 1, i) < 0.3 ? 1.0 : 1.5 * u01(c, 2, i) / double(m) + 0.02;
    }
    if (sum(cap) < 1) cap[0] += 1 - sum(cap);  // keep the capped simplex non-empty
    const std::vector<double> w = project_capped_simplex(v, cap);
    EXPECT_NEAR(sum(w), 1.0, 1e-12) << c;
    for (size_t i = 0; i < m; ++i) {
      EXPECT_GE(w[i], 0.0);
      EXPECT_LE(w[i], cap[i]);  // exactly, not within a tolerance
    }
    const std::vector<double> ref = bisect_projection(v, cap);
    for (size_t i = 0; i < m; ++i) EXPECT_NEAR(w[i], ref[i], 1e-12) << c << " " << i;
    // No random feasible point is closer to v.
    for (uint64_t t = 0; t < 20; ++t) {
      std::vector<double> u(m);
      for (size_t i = 0; i < m; ++i) u[i] = u01(c, 10 + t, i);
      u = project_capped_simplex(u, cap);
      EXPECT_LE(dist2(v, w), dist2(v, u) + 1e-12);
    }
  }
}

TEST(MixDirichlet, MomentsMatchTheDirichlet) {
  const std::vector<double> center = {0.4, 0.3, 0.15, 0.1, 0.05};
  const std::vector<double> cap(5, 1.0);
  for (double conc : {1.0, 10.0}) {
    const int64_t n = 20000;
    const std::vector<std::vector<double>> s = sample_mixtures(center, cap, n, conc, 42);
    const double a0 = conc * 5;  // sum of alpha
    for (size_t i = 0; i < 5; ++i) {
      double mean = 0, sq = 0;
      for (const auto& w : s) mean += w[i] / double(n);
      for (const auto& w : s) sq += (w[i] - mean) * (w[i] - mean) / double(n - 1);
      const double var = center[i] * (1 - center[i]) / (a0 + 1);
      EXPECT_NEAR(mean, center[i], 5 * std::sqrt(var / double(n))) << conc << " " << i;
      EXPECT_NEAR(sq / var, 1.0, 0.1) << conc << " " << i;
    }
  }
}

TEST(MixDirichlet, SmallAlphaBoostHasTheBetaMoments) {
  // Dirichlet(0.3, 0.7): w_0 ~ Beta(0.3, 0.7), mean 0.3, variance 0.105.
  double mean = 0, sq = 0;
  const int n = 40000;
  for (int k = 0; k < n; ++k) {
    const double w0 = sample_dirichlet({0.3, 0.7}, 9, uint64_t(k))[0];
    mean += w0 / n;
    sq += w0 * w0 / n;
  }
  EXPECT_NEAR(mean, 0.3, 0.006);
  EXPECT_NEAR(sq - mean * mean, 0.105, 0.004);
}

TEST(MixDirichlet, CapsAreRespectedExactly) {
  const int64_t m = 50;
  std::vector<double> center(m), cap(m, 1.0);
  for (int64_t i = 0; i < m; ++i) center[size_t(i)] = 1.0 / double(i + 1);
  const double total = sum(center);
  for (double& c : center) c /= total;
  for (int64_t i = 0; i < 10; ++i) cap[size_t(i)] = 1.5 * center[size_t(i)];  // the big buckets are scarce
  int64_t projected = 0;
  for (const auto& w : sample_mixtures(center, cap, 2000, 1.0, 3)) {
    EXPECT_NEAR(sum(w), 1.0, 1e-12);
    for (int64_t i = 0; i < m; ++i) {
      ASSERT_GE(w[size_t(i)], 0.0);
      ASSERT_LE(w[size_t(i)], cap[size_t(i)]);
    }
    bool at_cap = false;
    for (int64_t i = 0; i < 10; ++i) at_cap = at_cap || w[size_t(i)] == cap[size_t(i)];
    projected += at_cap ? 1 : 0;
  }
  EXPECT_GT(projected, 500);  // the caps bind often enough for this to test something
}

TEST(MixDirichlet, PureFunctionOfSeedAndIndex) {
  const std::vector<double> center = {0.5, 0.25, 0.125, 0.125};
  const std::vector<double> cap = {0.6, 1, 1, 0.2};
  const auto all = sample_mixtures(center, cap, 64, 2.0, 11);
  const auto tail = sample_mixtures(center, cap, 7, 2.0, 11, 40);  // a chunk drawn on its own
  for (size_t k = 0; k < tail.size(); ++k)
    EXPECT_EQ(0, std::memcmp(tail[k].data(), all[40 + k].data(), 4 * sizeof(double))) << k;
  EXPECT_EQ(sample_mixtures(center, cap, 64, 2.0, 11), all);
  EXPECT_NE(all[0], all[1]);
  EXPECT_NE(sample_mixtures(center, cap, 1, 2.0, 12)[0], all[0]);
  EXPECT_EQ(sample_dirichlet({1, 2, 3}, 5, 77), sample_dirichlet({1, 2, 3}, 5, 77));
  EXPECT_NE(sample_dirichlet({1, 2, 3}, 5, 77), sample_dirichlet({1, 2, 3}, 5, 78));
}

TEST(MixDirichlet, TinyAlphaStaysFiniteAndNearlyOneHot) {
  const std::vector<double> alpha(50, 1e-4);  // every Gamma underflows a double
  int64_t one_hot = 0;
  for (uint64_t k = 0; k < 200; ++k) {
    const std::vector<double> w = sample_dirichlet(alpha, 1, k);
    for (double x : w) ASSERT_TRUE(std::isfinite(x) && x >= 0);
    EXPECT_NEAR(sum(w), 1.0, 1e-12);
    one_hot += *std::max_element(w.begin(), w.end()) > 0.999 ? 1 : 0;
  }
  EXPECT_GT(one_hot, 190);
  // A zero alpha gives an exact zero; the others still sum to 1.
  const std::vector<double> w = sample_dirichlet({0, 1, 0, 2}, 4, 0);
  EXPECT_EQ(w[0], 0.0);
  EXPECT_EQ(w[2], 0.0);
  EXPECT_NEAR(w[1] + w[3], 1.0, 1e-15);
  // A centre with an empty bucket never gives it weight.
  for (const auto& s : sample_mixtures({0.5, 0.0, 0.5}, {1, 1, 1}, 100, 1.0, 2)) EXPECT_EQ(s[1], 0.0);
}

}  // namespace
}  // namespace mt::mix
