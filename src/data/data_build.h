// data_build.h — `moetrain data build`: the build config (TOML, strict) and
// the pipeline ingest -> tokenizer (trained or given) -> topic x quality
// labels -> eval split -> tokenize -> shards -> manifest. The dataset is
// assembled in a temporary directory next to the output and renamed into
// place only when complete.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/file_system.h"
#include "core/status.h"
#include "data/ingest.h"
#include "data/labelers.h"
#include "data/minhash.h"
#include "data/quality/quality_model.h"
#include "data/topics/topic_config.h"
#include "data/tokenizer.h"

namespace mt {

enum class LabelSource { kAuto, kMetadata, kComputed };  // auto: metadata where present, else computed

struct DataBuildConfig {
  std::vector<InputSpec> inputs;        // [[input]] tables, read in order
  CodeOptions code;                     // [code]
  std::string tokenizer_model;          // [tokenizer] model: an existing model file; "" = train one
  TokenizerTrainOptions tokenizer;      // [tokenizer] vocab_size, sample_bytes
  LabelSource topic_source = LabelSource::kAuto;  // [topics] source: "auto" | "metadata" | "cluster"
  TopicOptions topics;                  // [topics] n_topics, dims, sample_docs, iterations (the topic models' cluster options)
  LabelSource quality_source = LabelSource::kAuto;  // [quality] source: "auto" | "metadata" | "perplexity"
  int64_t n_quality = 5;                // [quality] levels q0 (worst) .. q{n-1} (best)
  std::vector<std::string> quality_reference;  // [quality] reference: files of "good" text; empty = none (perplexity only)
  QualityModelOptions quality_model;    // [quality] method, n-gram and classifier settings (data/quality)
  TopicConfig topic_config;             // [topics] method, vectors, seeds, examples, [[topics.map]] (data/topics)
  std::string quality_within = "topic";  // [quality] levels_within: levels cut within each "topic" | "input" | "corpus"
  int64_t quality_sample_docs = 10000;  // [quality] sample_docs: corpus documents the scorers are fitted on
  DocLimits limits;                     // [limits] max_doc_bytes, long_docs
  bool dedup_exact = true;              // [dedup] exact: drop exact duplicates of an earlier document
  bool dedup_near = true;               // [dedup] near: drop MinHash near-duplicates of an earlier document
  MinHashOptions minhash;               // [dedup] ngram, bands, rows
  int64_t batch_bytes = 32 << 20;       // [build] batch_bytes: text processed in parallel at a time
  double eval_frac = 0.01;              // [split] fraction of documents held out (by document hash)
  uint64_t seed = 1;                    // [split] seed for the eval split and clustering
  std::string source;                   // the config file
  std::string text;                     // its text, recorded in the manifest
};

class ConfigSchema;
// Declares every key of a data build config, bound to `c`.
void declare_keys(ConfigSchema& s, DataBuildConfig& c);

// Relative input paths are resolved against the config file's directory.
// `overrides` are --set assignments (input[0].path=..., tokenizer.vocab_size=...).
Result<DataBuildConfig> parse_data_build_config(const std::string& text, const std::string& source,
                                                const std::vector<std::string>& overrides = {});
Result<DataBuildConfig> load_data_build_config(const std::string& path, const std::vector<std::string>& overrides = {});

struct BuildReport {
  IngestStats ingest;
  std::map<std::string, int64_t> exact_duplicates, near_duplicates;  // per input path
  int64_t buckets = 0, train_tokens = 0, eval_tokens = 0, train_docs = 0, eval_docs = 0;
  int64_t vocab_size = 0;
  double seconds_ingest = 0, seconds_tokenizer = 0, seconds_labels = 0, seconds_tokenize = 0, seconds_write = 0;
};

// Builds into out_dir (which must not exist, or be empty), assembling in
// "<out_dir>.tmp-<pid>" beside it. First removes every "<out_dir>.tmp-<pid>"
// whose process is gone (a crashed build's leftovers), never one whose
// process is alive. Progress, and each removal, go to stderr when `verbose`.
// With several ranks (`comm`), each ingests, labels and tokenizes its share
// of the inputs and rank 0 writes the dataset; the bytes are those of a
// one-rank build. The output directory must be on a file system all ranks
// share. Every rank returns the same status. Every file of the dataset is
// written through `fs` (the tests inject failures: a failed write leaves
// neither the output nor the temporary directory, and names the file).
class Comm;
Status build_dataset(const DataBuildConfig& cfg, const std::string& out_dir, BuildReport& report, bool verbose,
                     Comm& comm, FileSystem& fs = default_file_system());
Status build_dataset(const DataBuildConfig& cfg, const std::string& out_dir, BuildReport& report,
                     bool verbose = false);

// "<out_dir>.tmp-<pid>" beside out_dir, where a build assembles; and the
// removal of those left by builds whose process is gone (see data_build.cpp).
std::string build_dir_of(const std::string& out_dir, int64_t pid);
void remove_stale_build_dirs(const std::string& out_dir, const std::function<void(const std::string&)>& say);

// The two ends of writing any dataset directory (data build, data
// decontaminate), so a failed write never leaves a half dataset at out_dir.
// begin_dataset_dir: out_dir must not exist, or be an empty directory; removes
// stale build directories (reporting through `say`), and creates
// "<out_dir>.tmp-<pid>/buckets" through `fs`; returns that directory. The
// caller removes it if anything fails later.
// publish_dataset_dir: syncs the file system holding `tmp` (one syncfs, so
// files may be written unsynced) and renames it to out_dir.
Result<std::string> begin_dataset_dir(const std::string& out_dir, FileSystem& fs,
                                      const std::function<void(const std::string&)>& say);
Status publish_dataset_dir(const std::string& tmp, const std::string& out_dir, FileSystem& fs);

}  // namespace mt
