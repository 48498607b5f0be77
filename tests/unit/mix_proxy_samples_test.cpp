// mix_proxy_samples_test.cpp — the proxies' mixtures (mix/proxy_samples.h):
// on a corpus whose caps bind hard (the three-bucket case where clamping
// gave 4 identical proxies in 16), every proxy is within its caps, no two
// are closer than search.min_distance, and clamping the same draws would
// have repeated some; with loose caps each proxy is a Dirichlet draw as
// drawn; proxy k depends only on the seed and the proxies before it; a
// region too small for the proxies is refused naming the keys.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <set>

#include "mix/dirichlet.h"
#include "mix/proxy_samples.h"

namespace mt::mix {
namespace {

double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

// A binding case: the natural shares near the caps' corner, caps summing to 1.2.
const std::vector<double> kCenter = {0.23, 0.577, 0.193}, kCap = {0.3, 0.65, 0.25};

TEST(ProxySamples, BindingCapsGiveDistinctProxiesWithinThem) {
  // Rejection alone (the default budget), and with the pull taking over after 2 rejections.
  for (const int64_t rejections : {int64_t(256), int64_t(2)}) {
    SCOPED_TRACE(rejections);
    ProxySampleOptions o;
    o.seed = 7;
    o.max_rejections = rejections;
    auto s = sample_proxies(kCenter, kCap, 16, o);
    ASSERT_TRUE(s.is_ok()) << s.status().message();
    ASSERT_EQ(s->mixtures.size(), 16u);
    EXPECT_NE(describe(*s, {"go", "python", "fortunes"}).find("16 distinct proxies"), std::string::npos);
    for (size_t k = 0; k < 16; ++k) {
      const std::vector<double>& w = s->mixtures[k];
      EXPECT_NEAR(sum(w), 1.0, 1e-12) << k;
      EXPECT_TRUE(within_caps(w, kCap)) << k;
      for (size_t j = 0; j < k; ++j) EXPECT_GE(l1_distance(w, s->mixtures[j]), o.min_distance) << k << " vs " << j;
    }
    EXPECT_GE(s->min_pair_distance, o.min_distance);
    EXPECT_LT(s->cap_acceptance(), 0.2) << "the caps bind: most draws are over one";
    EXPECT_EQ(s->pulled_inside > 0, rejections == 2);
    // The sampled region is reported per domain, and lies within the caps.
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_LT(s->lo[i], s->hi[i]);
      EXPECT_LE(s->hi[i], kCap[i]);
    }
  }
  // What projecting the same kind of draws onto the caps gives: repeats.
  const auto clamped = sample_mixtures(kCenter, kCap, 16, 1.0, 7);
  std::set<std::vector<double>> distinct(clamped.begin(), clamped.end());
  EXPECT_LT(distinct.size(), clamped.size()) << "clamping sends many draws to the same corner";
}

TEST(ProxySamples, LooseCapsKeepTheDirichletDrawsAsDrawn) {
  const std::vector<double> center = {0.5, 0.3, 0.2}, cap = {1.0, 1.0, 1.0};
  ProxySampleOptions o;
  o.seed = 3;
  o.min_distance = 0.0;
  auto s = sample_proxies(center, cap, 5, o);
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s->over_cap, 0);
  EXPECT_EQ(s->pulled_inside, 0);
  const std::vector<double> alpha = {3 * center[0], 3 * center[1], 3 * center[2]};  // concentration 1: m x center
  for (uint64_t k = 0; k < 5; ++k) EXPECT_EQ(s->mixtures[k], sample_dirichlet(alpha, 3, k << 24)) << k;
}

TEST(ProxySamples, ProxyKDependsOnlyOnTheSeedAndTheProxiesBefore) {
  ProxySampleOptions o;
  o.seed = 11;
  auto five = sample_proxies(kCenter, kCap, 5, o), ten = sample_proxies(kCenter, kCap, 10, o);
  ASSERT_TRUE(five.is_ok() && ten.is_ok());
  for (size_t k = 0; k < 5; ++k) EXPECT_EQ(five->mixtures[k], ten->mixtures[k]) << k;
  o.seed = 12;
  EXPECT_NE(sample_proxies(kCenter, kCap, 5, o)->mixtures, five->mixtures);
}

TEST(ProxySamples, ARegionTooSmallIsRefusedNamingTheKeys) {
  // Caps summing to 1 leave a single mixture: a second proxy cannot be distinct.
  const std::vector<double> cap = {0.3, 0.5, 0.2};
  ProxySampleOptions o;
  o.max_attempts = 64;
  o.max_rejections = 8;
  auto s = sample_proxies(cap, cap, 2, o);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.status().message().find("search.min_distance"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("holds only 1 proxies"), std::string::npos) << s.status().message();
}

TEST(ProxySamples, PullStaysWithinTheCapsAndReachesTheirBoundary) {
  const std::vector<double> v = {0.7, 0.2, 0.1}, cap = {0.4, 0.5, 0.4};
  const std::vector<double> edge = pull_inside_caps(v, cap, 1.0), half = pull_inside_caps(v, cap, 0.5);
  for (const auto& w : {edge, half}) {
    EXPECT_NEAR(sum(w), 1.0, 1e-12);
    EXPECT_TRUE(within_caps(w, cap));
  }
  EXPECT_NEAR(edge[0], cap[0], 1e-12) << "u = 1 stops where the segment leaves the caps";
  EXPECT_LT(half[0], edge[0]);
  EXPECT_NE(edge, half);
}

}  // namespace
}  // namespace mt::mix
