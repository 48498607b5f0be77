// mix_search.h — `moetrain mix search MIX.toml --out DIR`: the RegMix / Olmix
// loop. Sample K mixtures around the natural token shares, each feasible at
// the hero scale (no bucket read past max_epochs of its documents when the
// hero run takes total_tokens with it), train one proxy per mixture (a
// `moetrain train` child process; `jobs` at once), fit regressors from
// mixture weights to the target (a weighted set of terms: per-bucket held-out
// losses or bits per byte, task error rates), check their rank correlation on held-out proxies, search the
// capped simplex for the predicted best mixture and write it as a mixture
// file; optionally train the natural and the chosen mixture to compare
// predicted with actual. Every proxy reads a prefix of its own hero-scale
// schedule, so what it sees is a proportional subset of that hero run's data,
// and its per-bucket ledger is checked against its mixture (within one
// sequence). Resumable: a search killed at any point and started again ends
// with the same files.
//
// With bits-per-byte or task targets (or [eval] tasks), each run is then
// scored by `moetrain eval` of its final checkpoint (train/post_eval.h).
//
// DIR holds: mixtures/NAME.toml (every trained mixture), NAME/ (its run
// directory, with eval.json when scored), logs/NAME.log, proxies.jsonl (one line per finished run, in
// proxy order), search.json (fits, checks, the choice), best-mixture.toml and
// report.html. Formats: docs/mix.md.
#pragma once
#include <cstdint>
#include <map>
#include <vector>
#include <string>

#include "core/status.h"
#include "data/mixture.h"
#include "mix/proxy_samples.h"
#include "mix/runner/mix_config.h"
#include "mix/runner/mix_space.h"
#include "rundir/output_dir.h"
#include "train/run_config.h"

namespace mt {

// One mixture to train: a sampled proxy, or a verification run.
struct MixRun {
  std::string name;              // p000.., "natural", "best"; replicates "p000-r1", "best-r1", ...
  std::vector<double> domain_w;  // (domains) empty for verification runs
  std::vector<double> bucket_w;  // (buckets)
  std::string mixture;           // a replicate: the run whose mixture file it trains ("" = its own)
  int64_t seed_offset = 0;       // a replicate: train.seed + this
  int64_t scale = 1;             // the proxy's tokens times this (train.steps x scale; search.transfer_scale)
  const std::string& mixture_name() const { return mixture.empty() ? name : mixture; }
};

// The proxies' run config, the space and every sampled mixture planned at
// the hero scale: all checked before anything is written or trained.
struct MixSearchPlan {
  std::string out_dir;
  RunConfig base;
  MixSpace space;
  std::vector<MixRun> runs;                  // the proxies, then "natural" (search.verify)
  mix::ProxySamples samples;                 // how the proxies' mixtures were drawn
  std::map<std::string, std::string> texts;  // run -> its mixture file
  std::map<std::string, MixturePlan> plans;  // run -> its plan at the hero scale
};
Result<MixSearchPlan> plan_mix_search(const MixSearchConfig& c, const std::string& out_dir);

// What decides the proxies' results, for the output directory's stamp
// (rundir/output_dir.h): the proxies' resolved run config and the hero
// budget, and each proxy's mixture as a part (more proxies may be added).
OutputOwner mix_search_owner(const MixSearchPlan& plan);

struct MixSearchOptions {
  int64_t jobs = 1;       // proxies trained at once (child processes sharing the machine's threads)
  bool progress = true;
};

// Returns the path of the chosen mixture file (DIR/best-mixture.toml).
// The caller has claimed plan.out_dir (claim_output_dir with mix_search_owner).
Result<std::string> run_mix_search(const MixSearchConfig& c, MixSearchPlan& plan, const MixSearchOptions& opt);

}  // namespace mt
