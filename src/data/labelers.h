// labelers.h — topic and quality labels for documents that carry none in
// their metadata. Topic: spherical k-means (greedy k-means++ seeding) over hashed word
// TF-IDF vectors. Quality: the CCNet recipe — perplexity under an n-gram model of a
// reference set, cut into quantile levels. Both are deterministic given the
// seed (and independent of the thread count).
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace mt {

struct TopicOptions {
  int64_t n_topics = 40;
  int64_t dims = 1 << 16;        // hashed feature dimensions
  int64_t sample_docs = 20000;   // k-means is fitted on at most this many documents (evenly spaced)
  int64_t iterations = 12;
  uint64_t seed = 1;
};

// Cluster id in [0, min(n_topics, texts.size())) for every text.
std::vector<int32_t> cluster_topics(const std::vector<std::string_view>& texts, const TopicOptions& opt);

// Byte-level n-gram language model with Witten-Bell interpolation down to a
// uniform byte distribution; counts live in hashed tables of 2^log2_slots.
class NgramModel {
 public:
  explicit NgramModel(int order = 4, int log2_slots = 22);
  void train(std::string_view text);
  // Mean log2 probability per byte (higher = more like the reference).
  double mean_log2prob(std::string_view text) const;

 private:
  int order_;
  uint64_t mask_;
  std::vector<uint32_t> pair_count_;   // (context, next byte)
  std::vector<uint32_t> ctx_count_;    // context total
  std::vector<uint32_t> ctx_types_;    // distinct next bytes seen after the context
};

// Level in [0, n_levels) per score by rank: the lowest scores get 0, the
// highest n_levels - 1; equal counts per level up to rounding; ties by index.
std::vector<int32_t> quantile_levels(const std::vector<double>& scores, int64_t n_levels);

}  // namespace mt
