// mix_noise_test.cpp — the mixture search's noise (mix/noise.h): the
// replicate standard deviation and the seed difference against hand
// values; the bootstrap interval clear of 0 where the proxies follow a
// mixing law and reaching 0 where their targets are noise, and the rule
// keeping the natural mixture then (and when the gain is below the seed
// noise).
#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.h"
#include "mix/noise.h"

namespace mt::mix {
namespace {

TEST(MixNoise, ReplicateSdAndSeedDifference) {
  // Differences 0.2 and 0.4: sqrt((0.04 + 0.16) / 4).
  EXPECT_NEAR(replicate_sd({{1.0, 1.2}, {2.0, 1.6}}), std::sqrt(0.05), 1e-12);
  EXPECT_TRUE(std::isnan(replicate_sd({})));
  const SeedDifference d = seed_difference({1.0, 1.2, 1.4}, {2.0, 2.2}, NAN);
  EXPECT_NEAR(d.mean, 1.2 - 2.1, 1e-12);
  EXPECT_NEAR(d.std_error, std::sqrt(0.04 / 3 + 0.02 / 2), 1e-12);
  const SeedDifference one = seed_difference({1.0}, {2.0}, 0.1);  // one seed each: the replicate noise
  EXPECT_NEAR(one.std_error, std::sqrt(0.01 + 0.01), 1e-12);
  EXPECT_TRUE(std::isnan(seed_difference({1.0}, {2.0}, NAN).std_error));
}

// K proxies over 3 domains; target = 2 + exp(-3 w_0) (domain 0 helps) plus noise of `noise` sd, or pure noise.
void proxies(double law, double noise, std::vector<std::vector<double>>& X, std::vector<std::vector<double>>& Y) {
  for (uint64_t k = 0; k < 24; ++k) {
    const double a = (philox_u64(1, k, 0) % 1000) / 1000.0 * 0.8, b = (1 - a) * 0.5;
    X.push_back({a, b, 1 - a - b});
    const double u = (philox_u64(2, k, 0) % 100000) / 100000.0 - 0.5;
    Y.push_back({2.0 + law * std::exp(-3 * a) + noise * u * std::sqrt(12.0)});
  }
}

TEST(MixNoise, AClearLawGivesAGainClearOfZero) {
  std::vector<std::vector<double>> X, Y;
  proxies(1.0, 0.01, X, Y);
  const std::vector<double> natural = {0.3, 0.35, 0.35}, chosen = {0.75, 0.125, 0.125};
  auto g = bootstrap_gain(RegressorKind::kLogLinear, X, Y, {1.0}, 5, natural, chosen, 32);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_NEAR(g->predicted, std::exp(-0.9) - std::exp(-2.25), 0.05);
  EXPECT_GT(g->lo, 0.0);
  EXPECT_LE(g->lo, g->predicted);
  EXPECT_GE(g->hi, g->predicted);
  EXPECT_GT(g->resamples, 24);
  EXPECT_FALSE(choose_mixture(*g, 0.01).keep_natural);
  // The same gain below one run's seed noise is not a gain to act on.
  const MixtureChoice noisy = choose_mixture(*g, 1.0);
  EXPECT_TRUE(noisy.keep_natural);
  EXPECT_NE(noisy.reason.find("seed-to-seed"), std::string::npos) << noisy.reason;
}

TEST(MixNoise, NoiseAloneKeepsTheNaturalMixture) {
  std::vector<std::vector<double>> X, Y;
  proxies(0.0, 0.1, X, Y);
  auto g = bootstrap_gain(RegressorKind::kLogLinear, X, Y, {1.0}, 5, {0.3, 0.35, 0.35}, {0.75, 0.125, 0.125}, 32);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_LE(g->lo, 0.0) << g->predicted << " [" << g->lo << ", " << g->hi << "]";
  const MixtureChoice c = choose_mixture(*g, NAN);
  EXPECT_TRUE(c.keep_natural);
  EXPECT_NE(c.reason.find("natural mixture is kept"), std::string::npos) << c.reason;
}

}  // namespace
}  // namespace mt::mix
