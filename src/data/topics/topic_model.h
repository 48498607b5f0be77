// topic_model.h — topic labels a person would recognise, for documents whose
// metadata carries none. Methods (docs/data-topics.md has the measured
// comparison and when to use which):
//   kKmeans     spherical k-means over document vectors (TopicFeatures: LSA
//               of TF-IDF by default, or pooled fastText word vectors trained
//               on the sample, or both), clusters named by distinctive words;
//   kTfidf      the older spherical k-means over hashed word TF-IDF
//               (cluster_topics in data/labelers.h), kept for comparison;
//   kSeeded     named topics from keyword lists: centroids seeded from the
//               documents the keywords pick, then seeded k-means;
//   kSupervised a fastText classifier trained on labelled examples.
// kAuto picks kSupervised when examples are given, else kSeeded when keyword
// topics are given, else kKmeans.
//
// Fitting reads a bounded sample (TopicOptions::sample_docs, evenly spaced);
// assign() then labels any document. A fitted model is immutable: assign() is
// const, thread-safe, and a pure function of (fit inputs, options, text), so
// labels do not depend on the thread count. fastText is trained with one
// thread and a fixed seed (its multi-threaded training is hogwild, hence not
// reproducible) from a temp file under tmp_dir, removed after training.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "data/labelers.h"
#include "data/topics/doc_embedder.h"
#include "data/topics/doc_vectors.h"

namespace fasttext { class FastText; }

namespace mt {

enum class TopicMethod { kAuto, kKmeans, kTfidf, kSupervised, kSeeded };  // config: auto|kmeans|tfidf|supervised|seeded

// The document vectors kKmeans and kSeeded cluster (measured in
// docs/data-topics.md). LSA: TF-IDF projected on its top singular vectors;
// fastText: pooled word vectors trained on the sample; both: concatenated.
enum class TopicFeatures { kLsa, kFasttext, kLsaFasttext };  // config: lsa|fasttext|lsa_fasttext

// kSeeded: whether documents that match no keyword topic well get their own
// topic "other" (a cluster seeded from documents without any keyword), or
// must join the nearest named topic.
enum class OtherTopic { kNone, kCluster };

// One named topic and the words that identify it ("networking": socket, tcp).
// Keywords are matched as whole words after the topic tokeniser (lower case).
struct KeywordTopic {
  std::string topic;                  // the label; [A-Za-z0-9_.-], <= 64 bytes
  std::vector<std::string> keywords;  // at least one
};

struct TopicModelOptions {
  TopicMethod method = TopicMethod::kAuto;
  TopicFeatures features = TopicFeatures::kLsa;
  // Shared with the old method and declared by the data build:
  // n_topics, dims (hashed TF-IDF only), sample_docs, iterations, seed.
  TopicOptions cluster;
  int64_t vector_dim = 64;           // LSA dims, fastText word vector dims (each, when both)
  int64_t epochs = 5;                // fastText passes over the sample (unsupervised)
  int64_t supervised_epochs = 25;    // fastText passes over the labelled examples
  int64_t min_count = 2;             // words seen fewer times in the sample get no vector
  int64_t max_doc_bytes = 16 << 10;  // each document is read up to this many bytes
  WordModel word_model = WordModel::kCbow;
  DocPooling pooling = DocPooling::kIdfCentered;
  std::string tmp_dir;                 // fastText training file; "" = system temp dir
  std::vector<KeywordTopic> keywords;  // kSeeded
  OtherTopic other = OtherTopic::kCluster;
  std::string examples;  // kSupervised: JSONL file of {"text": ..., "topic": ...} lines
};

// The method kAuto resolves to (others are returned unchanged).
TopicMethod resolve_method(const TopicModelOptions& opt);

class TopicModel {
 public:
  ~TopicModel();
  TopicModel(const TopicModel&) = delete;
  TopicModel& operator=(const TopicModel&) = delete;

  // kKmeans or kSeeded (kAuto resolves; kTfidf and kSupervised are errors:
  // see label_topics and fit_supervised). Fits on at most
  // opt.cluster.sample_docs evenly spaced documents of `docs`.
  static Result<std::unique_ptr<TopicModel>> fit(const std::vector<std::string_view>& docs,
                                                 const TopicModelOptions& opt);
  // A classifier over (text, label) pairs; topic ids follow the labels' first
  // appearance, names are the labels as given.
  static Result<std::unique_ptr<TopicModel>> fit_supervised(
      const std::vector<std::pair<std::string_view, std::string>>& labelled, const TopicModelOptions& opt);

  // Topic id in [0, names().size()). Thread-safe; deterministic.
  int32_t assign(std::string_view text) const;
  const std::vector<std::string>& names() const { return names_; }
  TopicMethod method() const { return method_; }

 private:
  TopicModel();
  int32_t predict_supervised(std::string_view text) const;
  TopicMethod method_ = TopicMethod::kKmeans;
  std::vector<std::string> names_;
  int64_t max_doc_bytes_ = 0;
  // kKmeans / kSeeded: K topics, D = embedder dim.
  std::unique_ptr<DocVectors> embed_;
  std::vector<float> cent_KD;
  int32_t empty_topic_ = 0;  // documents with no known word ("other" when there is one)
  // kSupervised.
  std::unique_ptr<fasttext::FastText> clf_;
  int32_t prior_topic_ = 0;  // the most frequent label: for texts the classifier cannot read
};

// Labels for every text, and the topic names: the call a data build makes.
// Any method; kSupervised reads opt.examples. Texts are assigned in parallel.
struct TopicLabels {
  std::vector<int32_t> ids;        // (N) topic of each text
  std::vector<std::string> names;  // (K) ids index this
};
Result<TopicLabels> label_topics(const std::vector<std::string_view>& texts, const TopicModelOptions& opt);

// (text, topic) pairs from a JSONL file whose lines are {"text": ..., "topic": ...}.
// Errors name the file and line.
Result<std::vector<std::pair<std::string, std::string>>> read_labelled_examples(const std::string& path);

// Indices of m evenly spaced items out of n (all of them when m >= n).
std::vector<int64_t> evenly_spaced(int64_t n, int64_t m);

}  // namespace mt
