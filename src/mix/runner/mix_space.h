// mix_space.h — what a mixture search can choose from, read off the dataset
// and the hero mixture: the buckets, their natural token shares, each
// bucket's cap (the largest weight the hero run can give it without reading
// past max_epochs of its documents), the domains that vary (mix/domains.h)
// with their caps and centre, and the target's terms (per-bucket held-out
// loss or bits per byte, task error rates) with their weights. Also writes
// and checks a mixture file for a weight vector.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/dataset.h"
#include "data/mixture.h"
#include "mix/domains.h"
#include "mix/runner/mix_config.h"

namespace mt {

// One term of the target: a figure of a trained proxy, weighted.
struct TargetTerm {
  TargetName::Kind kind = TargetName::Kind::kLoss;
  size_t bucket = 0;   // kLoss, kBitsPerByte
  std::string task;    // kAcc, kAccNorm: the task; kTextSet: the text set
  double weight = 0;   // normalised: the terms' weights sum to 1
  std::string column;  // "loss:BUCKET", "bpb:BUCKET", "acc:TASK", "acc_norm:TASK", "text:NAME"
};

struct MixSpace {
  std::unique_ptr<Dataset> dataset;
  Mixture hero;                        // the hero mixture file as read
  int64_t seq_len = 0;
  int64_t hero_sequences = 0;          // N_full = total_tokens / seq_len
  int64_t proxy_sequences = 0;         // sequences one proxy reads
  int64_t held_out_sequences = 1;      // its eval pass per bucket: train.eval_batches x train.batch_size
  std::vector<std::string> buckets;    // dataset order
  std::vector<double> available;       // tokens one epoch of each bucket gives (train tokens + separators)
  std::vector<double> natural;         // available / sum
  std::vector<double> cap;             // per bucket, on the weight
  std::vector<double> target;          // per bucket: normalised weight of its held-out loss (0: not in the target)
  std::vector<TargetTerm> terms;       // the whole target, in [target] order, bucket order within a glob
  bool needs_eval = false;  // a term needs `moetrain eval` of each proxy (bits per byte, a task or a text set)
  std::vector<mix::Domain> domains;
  std::vector<double> domain_cap, center;  // per domain
  std::vector<double> previous;        // with [reuse]: the earlier mixture's weight per bucket
};

// `proxy_sequences`: what one proxy run reads (steps x grad_accum x batch).
// `held_out_sequences`: what its eval pass reads per bucket; a bucket whose
// held-out split holds fewer is left out of the target, as the trainer
// leaves it out of the pass.
Result<MixSpace> make_mix_space(const MixSearchConfig& c, const std::string& dataset_dir, int64_t seq_len,
                                int64_t proxy_sequences, int64_t held_out_sequences);

// A hero-scale mixture file giving bucket b weight w[b] (zeros left out).
std::string mixture_file_text(const MixSpace& s, const std::vector<double>& w, const std::string& comment);

// Plans that text against the dataset at the hero scale: an error if any
// bucket would be read past max_epochs (it never should: caps prevent it).
Result<MixturePlan> plan_at_hero_scale(const MixSpace& s, const std::string& text, const std::string& name);

}  // namespace mt
