// fasttext_classifier.h — the DCLM-style quality classifier (Li et al. 2024,
// "DataComp-LM": fastText on OpenHermes-2.5 + ELI5 positives against
// Common Crawl negatives, word bigrams, score = P(__label__hq)). Positives
// are reference ("good") texts, negatives a corpus sample.
//
// Determinism: fastText trains hogwild with one thread per shard of its input
// file; with thread = 1, a fixed seed and a training file written in a fixed
// (hash-shuffled) order, the same inputs give the same model bytes and so the
// same scores. fastText trains only from a file: it is written under
// `tmp_dir` (or the system temp directory) with a unique name and removed
// before train() returns, also on error.
//
// Thread safety: p_positive() may be called concurrently. It goes through
// fastText 0.9.2's `FastText::predictLine(...) const`, which reads the line with
// the const `Dictionary::getLine` and predicts into a `Model::State` it makes
// per call (`Model::predict(..., State&) const`); no fastText type used on
// this path has mutable members.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace fasttext {
class FastText;
}

namespace mt {

struct ClassifierOptions {
  int64_t dim = 64;                 // embedding dimension
  int64_t epochs = 10;              // passes over the training file
  double lr = 1.0;                  // initial learning rate (decays linearly to 0); 0.1 underfits small sets
  int64_t word_ngrams = 2;          // 2 = word bigrams as features: word order counts
  int64_t min_count = 1;            // words seen fewer times are dropped from the vocabulary
  int64_t buckets = 1 << 18;        // hashed bigram rows; memory (words + buckets) * dim * 4 bytes (2^18 x 64: 64 MiB)
  int64_t max_train_docs = 20000;   // per class and fold; more are thinned evenly
  int64_t max_doc_bytes = 8192;     // only a document's first bytes train or score
  // Word-shuffled copies of the positives added as negatives (0 = off,
  // 1 = one per positive): the same vocabulary in a broken order, so the
  // classifier must use its word bigrams rather than the reference's topic.
  int64_t shuffled_negatives = 1;
  uint64_t seed = 1;
  std::string tmp_dir;              // where the training file goes; "" = the system temp directory
};

class FastTextClassifier {
 public:
  ~FastTextClassifier();
  // Errors (empty class, unwritable temp dir, fastText exceptions) name what
  // failed; nothing is printed.
  static Result<std::unique_ptr<FastTextClassifier>> train(const std::vector<std::string_view>& positives,
                                                           const std::vector<std::string_view>& negatives,
                                                           const ClassifierOptions& opt);
  // P(positive) in [0, 1]; NaN for a text with no words. Thread-safe.
  double p_positive(std::string_view text) const;
  // Writes the model in fastText's format (for inspection, or the fasttext CLI).
  Status save(const std::string& path) const;

 private:
  FastTextClassifier();
  std::unique_ptr<fasttext::FastText> ft_;
  int64_t max_doc_bytes_ = 0;
};

// The line fastText sees for a document: the first `max_bytes` bytes (cut at
// a UTF-8 character boundary) with newlines replaced by spaces, since fastText
// ends an example at a newline.
std::string fasttext_line(std::string_view text, int64_t max_bytes);

// The words of every line of `line` in a seeded random order (whitespace
// collapsed to single spaces).
std::string shuffle_line_words(std::string_view line, uint64_t seed);

}  // namespace mt
