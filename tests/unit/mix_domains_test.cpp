// mix_domains_test.cpp — domains group buckets with fixed inner proportions:
// grouping by topic or quality, mixture reuse (changed and new buckets free,
// the rest frozen in one virtual domain), expansion back to buckets, and the
// caps and centres that carry bucket constraints over to domains.
#include <gtest/gtest.h>

#include "mix/domains.h"

namespace mt::mix {
namespace {

const std::vector<std::string> kNames = {"code/hi", "code/lo", "web/hi", "web/lo", "math"};
const std::vector<double> kNatural = {0.1, 0.3, 0.2, 0.2, 0.2};

void expect_near(const std::vector<double>& a, const std::vector<double>& b, double tol = 1e-15) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tol) << i;
}

TEST(MixDomains, OnePerBucket) {
  const std::vector<Domain> d = bucket_domains(kNames);
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d[2].name, "web/hi");
  EXPECT_EQ(d[2].buckets, std::vector<int64_t>{2});
  expect_near(expand(d, kNatural, 5), kNatural);
}

TEST(MixDomains, GroupedByTopicOrQuality) {
  const std::vector<Domain> topic = grouped_domains(kNames, kNatural, '/', 0);
  ASSERT_EQ(topic.size(), 3u);
  EXPECT_EQ(topic[0].name, "code");
  EXPECT_EQ(topic[0].buckets, (std::vector<int64_t>{0, 1}));
  expect_near(topic[0].inner, {0.25, 0.75});
  EXPECT_EQ(topic[1].name, "web");
  expect_near(topic[1].inner, {0.5, 0.5});
  EXPECT_EQ(topic[2].name, "math");  // no separator: its own group
  const std::vector<Domain> quality = grouped_domains(kNames, kNatural, '/', 1);
  ASSERT_EQ(quality.size(), 3u);
  EXPECT_EQ(quality[0].name, "hi");
  EXPECT_EQ(quality[0].buckets, (std::vector<int64_t>{0, 2}));
  expect_near(quality[0].inner, {1.0 / 3, 2.0 / 3});
  EXPECT_EQ(quality[1].name, "lo");
  expect_near(quality[1].inner, {0.6, 0.4});
  // The centre expands back to the natural distribution.
  expect_near(domain_center(topic, kNatural), {0.4, 0.4, 0.2});
  expect_near(expand(topic, domain_center(topic, kNatural), 5), kNatural);
  expect_near(expand(quality, domain_center(quality, kNatural), 5), kNatural);
  // A group with no natural weight splits evenly.
  expect_near(grouped_domains({"a/x", "a/y"}, {0, 0}, '/', 0)[0].inner, {0.5, 0.5});
}

TEST(MixDomains, CapsCarryOverToDomains) {
  const std::vector<Domain> topic = grouped_domains(kNames, kNatural, '/', 0);
  const std::vector<double> bucket_caps = {0.05, 1, 0.6, 1, 0.1};
  const std::vector<double> caps = domain_caps(topic, bucket_caps);
  // code: min(0.05 / 0.25, 1 / 0.75) = 0.2; web: min(0.6 / 0.5, 1 / 0.5, 1) = 1; math: 0.1.
  expect_near(caps, {0.2, 1.0, 0.1}, 1e-15);
  // At its cap a domain puts its binding bucket exactly at that bucket's cap.
  const std::vector<double> w = expand(topic, {0.2, 0.7, 0.1}, 5);
  EXPECT_NEAR(w[0], 0.05, 1e-15);
  for (size_t b = 0; b < 5; ++b) EXPECT_LE(w[b], bucket_caps[b] + 1e-15);
}

TEST(MixDomains, ReuseFreezesTheUnchangedBuckets) {
  const std::vector<std::string> names = {"a", "b", "c", "d"};
  const std::vector<double> previous = {0.2, 0.3, 0.0, 0.5};  // c is new
  auto d = reuse_domains(names, previous, {false, true, false, false});
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  ASSERT_EQ(d->size(), 3u);
  EXPECT_EQ((*d)[0].name, "b");
  EXPECT_EQ((*d)[1].name, "c");
  EXPECT_EQ((*d)[2].name, "unchanged");
  EXPECT_EQ((*d)[2].buckets, (std::vector<int64_t>{0, 3}));
  expect_near((*d)[2].inner, {0.2 / 0.7, 0.5 / 0.7});
  // The previous mixture is a point of the reduced search: b 0.3, c 0, rest 0.7.
  expect_near(expand(*d, {0.3, 0.0, 0.7}, 4), previous);
  // Moving weight to the new bucket keeps a and d in their old ratio.
  const std::vector<double> w = expand(*d, {0.3, 0.2, 0.5}, 4);
  EXPECT_NEAR(w[0] / w[3], 0.2 / 0.5, 1e-15);
  EXPECT_NEAR(w[2], 0.2, 1e-15);
}

TEST(MixDomains, ReuseRejectsWhatCannotBeReused) {
  const std::vector<std::string> names = {"a", "b"};
  EXPECT_FALSE(reuse_domains(names, {0.5, 0.5}, {false, false}).is_ok());  // nothing changed
  EXPECT_FALSE(reuse_domains(names, {0.5, 0.5}, {true, true}).is_ok());    // nothing left to reuse
  EXPECT_FALSE(reuse_domains(names, {1.0, 0.0}, {true, false}).is_ok());   // b is new, a changed: same
  EXPECT_FALSE(reuse_domains(names, {0.5, -0.1}, {true, false}).is_ok());
  EXPECT_FALSE(reuse_domains(names, {0.5}, {true, false}).is_ok());
  const auto r = reuse_domains(names, {0.5, 0.5}, {false, false});
  EXPECT_NE(r.status().message().find("no bucket is changed"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace mt::mix
