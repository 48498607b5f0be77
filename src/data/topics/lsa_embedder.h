// lsa_embedder.h — latent semantic analysis (Deerwester et al. 1990): word
// TF-IDF vectors (sublinear tf, words in >= 2 sample documents) projected on
// the top D right singular vectors of the sample's TF-IDF matrix, then put on
// the unit sphere (the LSA + normalise + k-means recipe of scikit-learn's
// text-clustering example). The truncated SVD is randomised (Halko et al.
// 2011: Gaussian test matrix from Philox, 2 power iterations, 10 extra
// columns), and every reduction runs in a fixed order: results do not depend
// on the thread count. N sample documents, V vocabulary, D dims, L = D + 10.
#pragma once
#include <string>
#include <unordered_map>

#include "core/status.h"
#include "data/topics/doc_vectors.h"

namespace mt {

struct LsaOptions {
  int64_t dim = 64;
  int64_t max_doc_bytes = 16 << 10;
  uint64_t seed = 1;
};

class LsaEmbedder final : public DocVectors {
 public:
  static Result<std::unique_ptr<LsaEmbedder>> fit(const std::vector<std::string_view>& sample, const LsaOptions& opt);
  int64_t dim() const override { return dim_; }
  void embed(std::string_view text, float* out_D) const override;

 private:
  using Sparse = std::vector<std::pair<int32_t, float>>;
  Sparse tfidf(std::string_view text) const;  // unit norm, sorted by word
  int64_t dim_ = 0, max_doc_bytes_ = 0;
  std::unordered_map<std::string, int32_t> index_;  // word -> column
  std::vector<float> idf_V;
  std::vector<float> proj_VD;  // (V, D): x -> x proj = the document's LSA coordinates
};

}  // namespace mt
