// quality_model.h — document quality scores for the data build, the way the
// field computes them (docs/data-quality.md):
//   perplexity  a token n-gram model (token_ngram.h). With a reference set it
//               is trained on the reference (CCNet); without one it is trained
//               on the corpus sample, cross-fitted: the sample is split into
//               two folds by document hash and each fold's model scores the
//               other fold, so no document is scored by a model that saw it;
//               the fit is then repeated once without the sample's
//               lowest-scoring quarter (a trimmed refit).
//   classifier  fastText, reference texts against a corpus sample (DCLM),
//               cross-fitted the same way (the sample is its negatives).
//   ensemble    both, each turned into a rank percentile over the corpus and
//               averaged (Nemotron-CC ensembles classifiers through buckets).
// fit() once, score() every document (const, thread-safe, each score a pure
// function of the document, so the thread count never changes a bit), then
// combine_scores() over all of them and quantile_levels_within() to cut.
#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "data/quality/fasttext_classifier.h"
#include "data/quality/quality_levels.h"
#include "data/quality/token_ngram.h"

namespace mt {

class ConfigSchema;

// kAuto resolves in fit(): kEnsemble with a reference set, kPerplexity without.
enum class QualityMethod : int { kAuto, kPerplexity, kClassifier, kEnsemble };

struct QualityModelOptions {
  QualityMethod method = QualityMethod::kAuto;
  int64_t ngram_order = 2;         // tokens; 2 beat 3 and 4 on the test corpus (docs/data-quality.md)
  int64_t ngram_log2_slots = 22;   // 12 * 2^22 bytes = 48 MiB per n-gram model (two when cross-fitted)
  int64_t vocab_size = 0;          // the tokenizer's vocabulary (uniform floor); 0 = largest id seen + 1
  int64_t max_doc_tokens = 1 << 16;  // only a document's first tokens train or score the n-gram model
  // Without a reference: after a first cross-fitted pass, the sample's
  // lowest-scoring fraction is left out and the fold models are trained again,
  // so junk that is common in the corpus stops defining "typical" text.
  double ngram_trim_fraction = 0.25;
  ClassifierOptions classifier;    // fastText; its seed and tmp_dir are set by the caller
  uint64_t seed = 1;               // cross-fitting folds and the classifier's training order
};

struct QualityExample {
  std::string_view text;          // the classifier reads this
  std::span<const int32_t> ids;   // the n-gram model reads these (tokenizer ids)
  uint64_t doc_hash = 0;          // picks the cross-fitting fold; stable across runs
};

struct QualityScore {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  double perplexity = kNaN;  // mean log-prob per token (nats; higher = better); NaN if not computed
  double classifier = kNaN;  // P(hq) in [0, 1]; NaN if not computed
  double combined = kNaN;    // set by combine_scores: a rank percentile in (0, 1)
};

class QualityModel {
 public:
  ~QualityModel();
  // `reference` may be empty: then only kPerplexity (or kAuto) is allowed,
  // cross-fitted on `corpus_sample`; kClassifier / kEnsemble without a
  // reference is an error. With a reference, the n-gram model is trained on
  // it and the classifier takes it as positives and the sample as negatives.
  static Result<std::unique_ptr<QualityModel>> fit(const std::vector<QualityExample>& reference,
                                                   const std::vector<QualityExample>& corpus_sample,
                                                   const QualityModelOptions& opt);
  // The fields of the resolved method (others stay NaN). Thread-safe.
  QualityScore score(const QualityExample& doc) const;
  // score() for every document, in parallel (OpenMP).
  std::vector<QualityScore> score_all(const std::vector<QualityExample>& docs) const;

  QualityMethod method() const { return method_; }  // never kAuto
  bool cross_fitted() const { return lm_.size() == 2; }
  int64_t ngram_memory_bytes() const;

 private:
  QualityModel() = default;
  int fold(uint64_t doc_hash) const;
  void train_cross_fitted(const std::vector<QualityExample>& sample, const std::vector<bool>& keep,
                          const QualityModelOptions& opt);
  QualityMethod method_ = QualityMethod::kPerplexity;
  uint64_t seed_ = 1;
  std::vector<TokenNgramLm> lm_;                 // 1 (reference) or 2 (fold 0, fold 1)
  std::vector<std::unique_ptr<FastTextClassifier>> classifier_;  // empty or (fold 0, fold 1)
};

// Fills .combined for every score, from the scores of all documents at once:
// the rank percentile of the method's score, or for kEnsemble the mean of the
// perplexity and classifier percentiles. `m` must be resolved (not kAuto).
void combine_scores(std::vector<QualityScore>& all, QualityMethod m);

// Declares quality.method, quality.ngram_order, quality.ngram_log2_slots and
// quality.classifier.* (quality.source, .n_quality, .reference and .order
// belong to the data build).
void declare_quality_model_keys(ConfigSchema& s, QualityModelOptions& o);

const char* quality_method_name(QualityMethod m);

}  // namespace mt
