// mix_config.h — the mixture-search file (`moetrain mix search MIX.toml`):
// which run config every proxy trains (base + overrides), the hero mixture
// whose budget and epoch limit bound every sampled mixture, how many proxies
// to sample and how, what to predict (a weighted set of terms: per-bucket
// held-out losses or bits per byte, task error rates, bits per byte on text
// sets that are not buckets), how to search, and
// optionally an earlier mixture to reuse.
// Every key: docs/config.md, "Mixture search file"; the method: docs/mix.md.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "train/post_eval.h"

namespace mt {

class ConfigSchema;

struct MixSearchConfig {
  std::string base;                 // run config of every proxy (relative to this file); needs data.dataset
  std::string mixture;              // the hero mixture (relative to this file): total_tokens, max_epochs, seed
  std::vector<std::string> set;     // overrides applied to every proxy ("train.steps=100")
  int64_t proxies = 16;             // K mixtures sampled and trained
  int64_t holdout = 4;              // the last `holdout` proxies are not fitted: the rank-correlation check
  double concentration = 1.0;       // Dirichlet concentration around the natural shares (higher = closer)
  double min_distance = 0.02;       // L1 distance every proxy's mixture keeps from every other (no repeats)
  uint64_t seed = 1;                // sampling seed (proxy k's mixture depends only on seed and k)
  std::string domains = "bucket";   // what varies: "bucket", "topic" or "quality" (blends of buckets)
  std::string regressor = "auto";   // the model the search uses: "loglinear", "xgboost", or "auto" (best held-out rank correlation)
  std::string method = "top-k-average";  // "top-k-average" (RegMix) or "optimum" (the regressor's own minimum)
  int64_t candidates = 100000;      // mixtures predicted by the search
  int64_t top_k = 100;              // best candidates averaged
  bool verify = true;               // also train the natural and the chosen mixture, for predicted vs actual
  int64_t verify_seeds = 1;         // seeds each of them is trained with (2+: a standard error of the difference)
  int64_t replicates = 0;           // the first N proxies trained again with another seed: the seed noise
  int64_t transfer_scale = 0;       // also train at this many times the proxy's tokens (0: not)
  int64_t transfer_proxies = 0;     // how many proxies (the first N; 0: all) are trained at that scale
  int64_t bootstrap = 64;           // refits of the regressor on resampled proxies: the gain's interval (0: none)
  std::vector<std::pair<std::string, double>> target;  // [target] "NAME" = weight (TargetName); {} = every bucket's loss, equally
  EvalTargets eval;                 // [eval] tasks: scored after each proxy trains (the acc: targets name them)
  std::string reuse_previous;       // [reuse] previous: an earlier mixture file; "" = search from scratch
  std::vector<std::string> reuse_changed;  // [reuse] changed: globs of buckets whose data changed
  std::string source;               // this file
};

// What a [target] key names. The search minimises the weighted sum of its
// terms, so every term is a figure where lower is better:
//   "GLOB" or "loss:GLOB"  held-out loss (nats/token) of every bucket matching GLOB
//   "bpb:GLOB"             held-out bits per byte of every bucket matching GLOB
//   "acc:TASK"             1 - acc on task TASK (a file of eval.tasks, by name)
//   "acc_norm:TASK"        1 - acc_norm on TASK
//   "text:NAME"            bits per byte on text set NAME (a file of
//                          eval.text_sets, by name): not a training bucket
struct TargetName {
  enum class Kind { kLoss, kBitsPerByte, kAcc, kAccNorm, kTextSet };
  Kind kind = Kind::kLoss;
  std::string what;  // the glob, the task or the set
  bool of_buckets() const { return of_buckets(kind); }
  static bool of_buckets(Kind k) { return k == Kind::kLoss || k == Kind::kBitsPerByte; }
};
// The message names the key and what it may be; no location (the caller's).
Result<TargetName> parse_target_name(const std::string& key);
// The prefix of a kind in target names and columns ("loss", "bpb", "acc", "acc_norm").
const char* target_prefix(TargetName::Kind k);

void declare_keys(ConfigSchema& s, MixSearchConfig& c);
Result<MixSearchConfig> load_mix_search_config(const std::string& path, const std::vector<std::string>& overrides);

}  // namespace mt
