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
#include <string>

#include "core/status.h"
#include "mix/runner/mix_config.h"

namespace mt {

struct MixSearchOptions {
  std::string out_dir;
  int64_t jobs = 1;       // proxies trained at once (child processes sharing the machine's threads)
  bool progress = true;
};

// Returns the path of the chosen mixture file (DIR/best-mixture.toml).
Result<std::string> run_mix_search(const MixSearchConfig& c, const MixSearchOptions& opt);

}  // namespace mt
