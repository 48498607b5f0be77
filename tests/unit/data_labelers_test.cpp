// data_labelers_test.cpp — topic clustering recovers synthetic topics and is
// deterministic; quality levels are quantiles; the n-gram model prefers text
// like its reference.
#include "data/labelers.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "support/data_fixtures.h"

namespace mt {
namespace {

namespace td = testdata;

TEST(Labelers, ClusteringRecoversSyntheticTopics) {
  std::vector<std::string> docs;
  std::vector<int> truth;
  for (int i = 0; i < 400; ++i) {
    truth.push_back(i % 4);
    docs.push_back(td::document(i % 4, 30 + i % 50, uint64_t(i)));
  }
  std::vector<std::string_view> views(docs.begin(), docs.end());
  TopicOptions opt;
  opt.n_topics = 4;
  opt.seed = 3;
  const std::vector<int32_t> a = cluster_topics(views, opt);
  // Purity: every cluster holds one true topic, every topic one cluster.
  std::map<int32_t, std::set<int>> by_cluster;
  std::map<int, std::set<int32_t>> by_topic;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_GE(a[i], 0);
    ASSERT_LT(a[i], 4);
    by_cluster[a[i]].insert(truth[i]);
    by_topic[truth[i]].insert(a[i]);
  }
  EXPECT_EQ(by_cluster.size(), 4u);
  for (auto& [c, ts] : by_cluster) EXPECT_EQ(ts.size(), 1u) << "cluster " << c << " mixes topics";
  for (auto& [t, cs] : by_topic) EXPECT_EQ(cs.size(), 1u) << "topic " << t << " is split";
  // Deterministic, and a smaller fitting sample still labels every document.
  EXPECT_EQ(cluster_topics(views, opt), a);
  opt.sample_docs = 50;
  EXPECT_EQ(cluster_topics(views, opt).size(), a.size());
  // More topics than documents: one cluster per document at most.
  std::vector<std::string_view> two(views.begin(), views.begin() + 2);
  opt.n_topics = 40;
  for (int32_t c : cluster_topics(two, opt)) EXPECT_LT(c, 2);
}

TEST(Labelers, QuantileLevels) {
  std::vector<double> s = {5, 1, 3, 2, 4, 0, 9, 8, 7, 6};
  const auto lv = quantile_levels(s, 5);
  // Ranks 0..9 -> levels 0,0,1,1,2,2,3,3,4,4 by score.
  const std::vector<int32_t> want = {2, 0, 1, 1, 2, 0, 4, 4, 3, 3};
  EXPECT_EQ(lv, want);
  EXPECT_EQ(quantile_levels({}, 5).size(), 0u);
  EXPECT_EQ(quantile_levels({1.0}, 5), std::vector<int32_t>{0});
}

TEST(Labelers, NgramModelPrefersTextLikeItsReference) {
  NgramModel lm(4, 18);
  for (int i = 0; i < 50; ++i) lm.train(td::document(0, 80, uint64_t(i)));
  const double same = lm.mean_log2prob(td::document(0, 80, 999));
  const double other = lm.mean_log2prob(td::document(1, 80, 999));
  const double noise = lm.mean_log2prob("x7#Qz!!p@@0~~`\\|;;;::?<>{}[]xx99%%^^&&**(())");
  EXPECT_GT(same, other);
  EXPECT_GT(other, noise - 100);  // finite
  EXPECT_GT(same, -3.0);           // well under 8 bits per byte
  EXPECT_LT(noise, same);
  EXPECT_EQ(lm.mean_log2prob(""), 0.0);
}

}  // namespace
}  // namespace mt
