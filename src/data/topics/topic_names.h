// topic_names.h — names a person can read for computed clusters, such as
// "t03-socket-errno": the cluster's number, then its two most distinctive
// words. Distinctive = largest contribution to the KL divergence between the
// cluster's and the corpus's document frequencies, p_c log(p_c / p), which
// prefers words most of the cluster uses and the rest of the corpus does not
// (a word in every document scores 0; a rare word found once scores little).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mt {

// Keeps [A-Za-z0-9_.-], maps everything else to '_', cuts to max_bytes.
std::string file_safe_name(std::string_view s, int64_t max_bytes = 64);

// One name per cluster 0..k-1, for documents `texts` labelled `labels`
// (read up to max_doc_bytes). Unique (the number prefix), file-name safe,
// at most 64 bytes, and a function of (texts, labels) only: ties between
// words break by the word. A cluster with no documents is named "tNN".
std::vector<std::string> name_clusters(const std::vector<std::string_view>& texts,
                                       const std::vector<int32_t>& labels, int64_t k, int64_t max_doc_bytes,
                                       int64_t words_per_name = 2);

}  // namespace mt
