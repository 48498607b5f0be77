// model_sampling_test.cpp — sample_token (src/model/sampling.h): temperature 0 is
// argmax (ties to the lower id), top-k never leaves the k most likely
// tokens, top-p keeps the smallest set whose mass reaches p, a (seed,
// stream, counter) always draws the same token, and the tokens drawn over
// many counters follow the tempered softmax (chi-square test, p = 1e-6).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "model/sampling.h"
#include "support/random.h"

namespace mt {
namespace {

std::vector<std::pair<float, int32_t>> scratch;

int32_t draw(const std::vector<float>& logits, const SamplingOptions& o, uint64_t counter, uint64_t stream = 0) {
  return sample_token(logits.data(), int64_t(logits.size()), o, stream, counter, scratch);
}

// Counts of each token over counters [0, n).
std::vector<int64_t> histogram(const std::vector<float>& logits, const SamplingOptions& o, int64_t n) {
  std::vector<int64_t> h(logits.size(), 0);
  for (int64_t i = 0; i < n; ++i) ++h[size_t(draw(logits, o, uint64_t(i)))];
  return h;
}

// log p for the given probabilities: softmax gives them back exactly (up to rounding).
std::vector<float> logits_of(const std::vector<double>& p) {
  std::vector<float> l;
  for (double x : p) l.push_back(float(std::log(x)));
  return l;
}

TEST(Sampling, TemperatureZeroIsArgmaxTiesToTheLowerId) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const std::vector<float> l = testing::randn(97, 2.0f, seed);
    const int32_t want = int32_t(std::max_element(l.begin(), l.end()) - l.begin());
    for (uint64_t c = 0; c < 5; ++c) EXPECT_EQ(draw(l, {0.0, 0, 1.0, seed}, c), want);
    EXPECT_EQ(draw(l, {-1.0, 5, 0.5, seed}, 0), want);  // negative temperature: greedy too, whatever k and p
  }
  EXPECT_EQ(draw({0.5f, 3.0f, 1.0f, 3.0f}, {0.0, 0, 1.0, 1}, 0), 1);
}

TEST(Sampling, TopKNeverLeavesTheKMostLikely) {
  const std::vector<float> l = testing::randn(50, 1.5f, 7);
  std::vector<float> sorted = l;
  std::sort(sorted.rbegin(), sorted.rend());
  for (int64_t k : {1, 3, 10}) {
    std::set<int32_t> seen;
    for (uint64_t c = 0; c < 4000; ++c) {
      const int32_t t = draw(l, {5.0, k, 1.0, 11}, c);  // hot: without the cut most draws would fall outside
      EXPECT_GE(l[size_t(t)], sorted[size_t(k - 1)]) << "k " << k << " counter " << c;
      seen.insert(t);
    }
    EXPECT_EQ(int64_t(seen.size()), k);  // and every one of the k is drawn
  }
}

TEST(Sampling, TopPKeepsTheSmallestSetReachingP) {
  const std::vector<float> l = logits_of({0.1, 0.4, 0.2, 0.3});  // sorted: 1 (0.4), 3 (0.3), 2 (0.2), 0 (0.1)
  struct Case {
    double p;
    std::set<int32_t> kept;
  };
  for (const Case& cs : {Case{0.3, {1}}, Case{0.65, {1, 3}}, Case{0.85, {1, 3, 2}}, Case{0.95, {1, 3, 2, 0}}}) {
    const std::vector<int64_t> h = histogram(l, {1.0, 0, cs.p, 3}, 20000);
    for (int32_t t = 0; t < 4; ++t)
      EXPECT_EQ(h[size_t(t)] > 0, cs.kept.count(t) > 0) << "top_p " << cs.p << " token " << t << " drawn " << h[size_t(t)];
  }
  // Renormalised over the kept set: top_p 0.65 keeps {0.4, 0.3}, so token 1 has 4/7.
  const std::vector<int64_t> h = histogram(l, {1.0, 0, 0.65, 3}, 20000);
  const double f = double(h[1]) / 20000.0, p = 4.0 / 7.0;
  EXPECT_NEAR(f, p, 5 * std::sqrt(p * (1 - p) / 20000.0));
}

TEST(Sampling, SameSeedAndCounterSameToken) {
  const std::vector<float> l = testing::randn(200, 1.0f, 5);
  const SamplingOptions o{0.9, 40, 0.95, 77};
  int differs_by_seed = 0, differs_by_stream = 0;
  for (uint64_t c = 0; c < 200; ++c) {
    const int32_t t = draw(l, o, c, 3);
    EXPECT_EQ(draw(l, o, c, 3), t);
    differs_by_seed += draw(l, {0.9, 40, 0.95, 78}, c, 3) != t;
    differs_by_stream += draw(l, o, c, 4) != t;
  }
  EXPECT_GT(differs_by_seed, 100);  // another seed or stream is another stream of numbers
  EXPECT_GT(differs_by_stream, 100);
}

// Over N counters, token counts against N x softmax(logits / T): Pearson's
// chi-square with V - 1 = 7 degrees of freedom below 41.9 (its 1e-6 upper
// quantile, Wilson-Hilferty), and every token within 5 standard errors.
TEST(Sampling, EmpiricalDistributionIsTheTemperedSoftmax) {
  const std::vector<float> l = testing::randn(8, 1.0f, 9);
  const int64_t N = 40000;
  for (double T : {0.7, 1.0, 1.6}) {
    std::vector<double> p(l.size());
    double sum = 0;
    for (size_t i = 0; i < l.size(); ++i) sum += p[i] = std::exp(double(l[i]) / T);
    for (double& x : p) x /= sum;
    const std::vector<int64_t> h = histogram(l, {T, 0, 1.0, 2024}, N);
    double chi2 = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      const double e = double(N) * p[i];
      chi2 += (double(h[i]) - e) * (double(h[i]) - e) / e;
      EXPECT_NEAR(double(h[i]) / double(N), p[i], 5 * std::sqrt(p[i] * (1 - p[i]) / double(N))) << "T " << T << " token " << i;
    }
    EXPECT_LT(chi2, 41.9) << "T " << T;
  }
}

}  // namespace
}  // namespace mt
