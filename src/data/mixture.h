// mixture.h — a data mixture (TOML) and its plan against a dataset.
//
// A mixture gives bucket weights ([weights] with globs, or [topic_weights] x
// [quality_weights]), the full-scale token budget `total_tokens`, the `scale`
// of this run ("1/360"), `max_epochs` (default 1) and the sampler `seed`.
// The plan rounds the weights to whole sequences over the full-scale run
// (largest remainder): bucket b gets Q_b of N_full = total_tokens / seq_len
// sequences. A run at scale s reads the first floor(s * N_full) sequences of
// that one schedule (sampler.h), so it takes from bucket b the first
// s * Q_b of the sequences the full run takes (exactly, when s * Q_b is an
// integer; within one sequence otherwise). Planning fails, naming every
// offending bucket, if the run would read past max_epochs of a bucket.
//
// A run in phases with several mixtures (train/phase_schedule.h) reads one
// pool: each bucket's documents in one order, every segment continuing where
// the full-scale run's earlier segments stop (`taken`). A proxy of a phased
// run so reads, phase by phase, a prefix of what the full run reads, and the
// epoch check counts what the earlier segments took.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace mt {

class Dataset;

struct Mixture {
  // Each pattern's weight is spread over the buckets it matches (fnmatch
  // globs over "<topic>/<quality>"; "*" matches "/" too) in proportion to
  // their train tokens. A bucket matched by two patterns is an error.
  std::vector<std::pair<std::string, double>> weights;
  // Factorised form: a topic's share is topic_weights[t] (normalised); inside
  // a topic, quality q is weighted by quality_weights[q] x its natural size.
  // Absent [topic_weights] = natural topic shares; absent [quality_weights] =
  // natural quality shares. Unlisted topics/qualities get weight 0. Patterns
  // are fnmatch globs too, and a topic (quality) matched by two patterns of
  // one table is an error, as in [weights].
  std::vector<std::pair<std::string, double>> topic_weights, quality_weights;
  int64_t total_tokens = 0;       // full-scale budget (tokens)
  int64_t scale_num = 1, scale_den = 1;  // this run reads scale_num / scale_den of it
  double max_epochs = 1.0;        // passes over a bucket's documents allowed
  uint64_t seed = 1;              // document order inside each bucket
  std::string source;             // file name, for messages
  std::string text;               // TOML text (its hash identifies the mixture)
};

class ConfigSchema;
// Declares every key of a mixture file, bound to `m`.
void declare_keys(ConfigSchema& s, Mixture& m);

// `overrides` are --set assignments (scale=1/360, weights."code/*"=0.3).
Result<Mixture> parse_mixture(const std::string& text, const std::string& source,
                              const std::vector<std::string>& overrides = {});
Result<Mixture> load_mixture(const std::string& path, const std::vector<std::string>& overrides = {});

struct BucketPlan {
  int64_t bucket = 0;             // index in Dataset::buckets()
  std::string name;
  double weight = 0;              // normalised requested weight
  int64_t full_sequences = 0;     // Q_b at scale 1
  int64_t sequences = 0;          // upper bound at this scale: ceil(s * Q_b)
  int64_t tokens_wanted = 0;      // sequences * seq_len + 1 (the last target)
  int64_t tokens_available = 0;   // one epoch: train tokens + one separator per document
  int64_t tokens_before = 0;      // taken by earlier segments of a phased run at full scale (read first)
  double epochs = 0;              // (tokens_before + tokens_wanted) / tokens_available
};

struct MixturePlan {
  int64_t seq_len = 0;
  int64_t full_sequences = 0;     // N_full
  int64_t sequences = 0;          // N_run = floor(s * N_full)
  int64_t scale_num = 1, scale_den = 1;
  double max_epochs = 1;
  uint64_t seed = 1;
  std::vector<BucketPlan> buckets;       // every dataset bucket with weight > 0, in dataset order
  std::vector<std::string> violations;   // one line per bucket over max_epochs
  // Ok, or an error listing every violation.
  Status check(const std::string& mixture_source) const;
  // `taken` (per dataset bucket) plus what this plan's full-scale run takes.
  std::vector<int64_t> taken_after(std::vector<int64_t> taken) const;
};

// Errors: a pattern matching no bucket, a bucket matched twice, no weight.
// `taken`: tokens of each dataset bucket (by index) that earlier segments of
// a phased run take at full scale; empty = none.
Result<MixturePlan> plan_mixture(const Dataset& ds, const Mixture& mx, int64_t seq_len,
                                 const std::vector<int64_t>& taken = {});

}  // namespace mt
