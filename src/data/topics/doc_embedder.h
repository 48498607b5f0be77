// doc_embedder.h — document vectors from fastText word vectors trained on the
// corpus itself (Bojanowski et al. 2017): a document is the IDF-weighted mean
// of its words' unit word vectors, minus the corpus mean, on the unit sphere.
// Trained once on a sample; afterwards it is a plain lookup table (fastText is
// not kept), so embed() is const, thread-safe and allocation-light.
// V vocabulary words, D vector dim.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "data/topics/doc_vectors.h"

namespace mt {

// How word vectors are pooled into a document vector (measured in
// docs/data-topics.md: plain means are dominated by the words every document
// shares, "function", "the", "return"; IDF weighting and removing the common
// direction, the idea of Arora et al. 2017's SIF, fix most of that).
enum class DocPooling { kMean, kIdf, kIdfCentered };

enum class WordModel { kSkipgram, kCbow };

struct DocEmbedderOptions {
  int64_t dim = 100;              // word / document vector dimensions
  int64_t epochs = 5;             // fastText passes over the sample
  int64_t min_count = 2;          // rarer words get no vector
  int64_t max_doc_bytes = 64 << 10;  // a document is read up to this many bytes
  WordModel model = WordModel::kSkipgram;
  DocPooling pooling = DocPooling::kIdfCentered;
  uint64_t seed = 1;
  std::string tmp_dir;            // fastText's training file goes here; "" = system temp
};

class DocEmbedder final : public DocVectors {
 public:
  // Trains word vectors on `sample` (fastText, one thread, fixed seed).
  static Result<DocEmbedder> train(const std::vector<std::string_view>& sample, const DocEmbedderOptions& opt);

  int64_t dim() const override { return dim_; }
  // Writes the unit-norm vector of `text` to out_D (all zero when no word of
  // the text has a vector).
  void embed(std::string_view text, float* out_D) const override;
  // Vocabulary index of a word, -1 when it has no vector.
  int32_t word_id(const std::string& w) const;
  const std::vector<std::string>& words() const { return words_; }

 private:
  void pool(const std::vector<std::string>& words, float* out_D) const;
  int64_t dim_ = 0;
  int64_t max_doc_bytes_ = 0;
  DocPooling pooling_ = DocPooling::kIdfCentered;
  std::vector<std::string> words_;                    // (V)
  std::unordered_map<std::string, int32_t> index_;    // word -> row
  std::vector<float> vec_VD;                          // (V, D) unit word vectors
  std::vector<float> idf_V;                           // (V) log((N+1)/(df+1)) + 1 over the sample
  std::vector<float> mean_D;                          // (D) mean pooled sample vector (kIdfCentered)
};

}  // namespace mt
