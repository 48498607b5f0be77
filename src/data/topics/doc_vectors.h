// doc_vectors.h — what the clustering sees of a document: a unit vector of a
// fixed dimension D. Implementations: fastText word-vector pooling
// (doc_embedder.h), LSA (lsa_embedder.h), and their concatenation. Fitted
// once, then immutable: embed() is const and thread-safe.
#pragma once
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace mt {

class DocVectors {
 public:
  virtual ~DocVectors() = default;
  virtual int64_t dim() const = 0;
  // Writes a unit-norm vector to out_D, or all zeros when the text has no
  // word the model knows.
  virtual void embed(std::string_view text, float* out_D) const = 0;
};

// [a; b] / sqrt(2) for unit a and b: the cosine of two concatenations is the
// mean of the two cosines, so each view counts equally. Rows where one view
// is zero keep the other at weight 1/sqrt(2) and are renormalised.
class ConcatVectors final : public DocVectors {
 public:
  ConcatVectors(std::unique_ptr<DocVectors> a, std::unique_ptr<DocVectors> b) : a_(std::move(a)), b_(std::move(b)) {}
  int64_t dim() const override { return a_->dim() + b_->dim(); }
  void embed(std::string_view text, float* out_D) const override;

 private:
  std::unique_ptr<DocVectors> a_, b_;
};

}  // namespace mt
