// build_labels.h — the labellers a build fits once on samples of the corpus
// and then applies to every document (topics, quality scores), behind one
// interface so the build's passes do not care which methods the config
// picked. Fitting is deterministic and the same on every rank; applying is
// thread-safe.
#pragma once
#include <cmath>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "data/tokenizer.h"

namespace mt {

struct DataBuildConfig;

// Raw quality scores of one document (NaN where a scorer did not run).
struct DocScores {
  double perplexity = std::nan("");  // mean log-probability per token under the n-gram model (higher = better)
  double classifier = std::nan("");  // P(reference-like) from the fastText classifier
  double combined = std::nan("");    // the score levels are cut on
};

// A sampled document, for fitting.
struct SampleDoc {
  std::string text;
  uint64_t hash = 0;  // the document's key (stable across ranks and runs)
};

class BuildLabelers {
 public:
  virtual ~BuildLabelers() = default;
  // The topic of a document without one from metadata.
  virtual std::string topic(std::string_view text) const = 0;
  // Raw scores of a document (its text and token ids).
  virtual DocScores score(std::string_view text, std::span<const int32_t> ids, uint64_t hash) const = 0;
  // Fills `combined` from the raw scores of every computed document at once
  // (an ensemble ranks each score over the corpus).
  virtual void combine(std::vector<DocScores>& all) const = 0;
  // How labels were assigned, for the manifest.
  virtual nlohmann::json describe() const = 0;
};

// Fits what `cfg` asks for on the samples (in document order); need_topics /
// need_quality say whether any document lacks metadata labels.
Result<std::unique_ptr<BuildLabelers>> fit_build_labelers(const DataBuildConfig& cfg, const Tokenizer& tok,
                                                          const std::vector<SampleDoc>& topic_sample,
                                                          const std::vector<SampleDoc>& quality_sample,
                                                          bool need_topics, bool need_quality,
                                                          const std::string& scratch_dir);

}  // namespace mt
