// dataset.h — a built dataset directory: manifest.json (buckets, counts,
// tokenizer hash, ingest statistics), tokenizer.model, and per bucket a train
// and an eval shard (shard.h). Opening checks that the manifest, the
// tokenizer file and every shard agree; any disagreement is an error naming
// the file. Layout: docs/data.md.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/shard.h"
#include "data/tokenizer.h"

namespace mt {

inline constexpr int kDatasetVersion = 1;

struct Bucket {
  std::string name;     // "<topic>/<quality>"
  std::string topic, quality;
  std::unique_ptr<ShardReader> train, eval;
};

// The distinct held-out sequences of seq_len tokens (+1 target) a bucket's
// eval split holds: its documents in stored order with separators, cut into
// consecutive windows (0 when shorter than one). The trainer's eval pass,
// `moetrain eval` and the mixture search's target all count with this.
int64_t held_out_windows(const Bucket& b, int64_t seq_len);

class Dataset {
 public:
  static Result<std::unique_ptr<Dataset>> open(const std::string& dir, ShardVerify verify = ShardVerify::kFull);

  const std::string& dir() const { return dir_; }
  const std::vector<Bucket>& buckets() const { return buckets_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const nlohmann::json& manifest() const { return manifest_; }
  // -1 if absent.
  int64_t find(const std::string& name) const;
  // xxh64 of manifest.json: identifies the dataset in checkpoints.
  const std::string& fingerprint() const { return fingerprint_; }

 private:
  std::string dir_, fingerprint_;
  nlohmann::json manifest_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<Bucket> buckets_;
};

// Shard file paths of a bucket split, relative to the dataset directory.
std::string shard_tokens_file(const std::string& topic, const std::string& quality, const std::string& split);
std::string shard_index_file(const std::string& topic, const std::string& quality, const std::string& split);
// One JSON line per document of the split, in shard order: id, provenance,
// labels and scores (docs/data.md, "Provenance").
std::string shard_docs_file(const std::string& topic, const std::string& quality, const std::string& split);

}  // namespace mt
