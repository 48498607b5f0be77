// keyword_seeds.h — starting centroids for named topics from keyword lists
// (seeded k-means, Basu et al. 2002). Each sample document votes for the
// topic whose keywords it uses most often (no vote on a tie or no hit); a
// topic's centroid is the mean vector of its voters. A topic no document
// votes for starts from the vector of its keywords themselves, the
// "dataless" classification of Chang et al. 2008, so a rare topic still
// exists. With OtherTopic::kCluster one more centroid, "other", is the mean of
// the documents that use no keyword at all.
// N sample documents, D vector dim, K topics (+1 with "other").
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "data/topics/doc_vectors.h"
#include "data/topics/topic_model.h"

namespace mt {

struct KeywordSeeds {
  std::vector<float> cent_KD;      // (K, D) unit-norm starting centroids
  std::vector<std::string> names;  // (K) topic names, "other" last when asked for
  int64_t seeded_docs = 0;         // documents that voted for a topic
};

// Errors: no topics, a topic without keywords, a name that is not file-name
// safe or repeats, or a topic none of whose keywords has a word vector and
// that no document matched.
Result<KeywordSeeds> keyword_seeds(const std::vector<std::string_view>& sample, const float* x_ND,
                                   const DocVectors& embed, const TopicModelOptions& opt);

}  // namespace mt
