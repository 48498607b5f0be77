// arch_ladder.h — factor (d) of `moetrain arch compare`: each candidate's
// small ladder (the spec's ladder file with the candidate's keys added to
// ladder.set, cooldown branches included) in DIR/ladder/NAME, all trained as
// one queue (ladder/runner/ladder_run.h: resumable, results independent of
// --jobs), then L(N, D) fitted to each candidate's results with its bootstrap
// refits (ladder/analysis.h), which projections to the hero read.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "arch/arch_spec.h"
#include "core/status.h"
#include "ladder/runner/ladder_run.h"

namespace mt {

struct CandidateLadder {
  LadderConfig config;
  LadderPlan plan;
  std::string largest_run_dir;  // the last rung's full run (decode throughput is measured on it)
};

// Loads and plans the candidate's ladder into `out_dir`; errors name the
// candidate and the rung (nothing is written).
Result<CandidateLadder> plan_candidate_ladder(const ArchSpec& spec, const ArchCandidate& c, const std::string& out_dir);

// The runs of a results file as the fit record lists them (name, active_params, tokens, flops, loss).
Result<nlohmann::json> ladder_runs(const std::string& results_path);

// The fit record of one candidate's results file: its runs, the law, each
// parameter's bootstrap estimate and the refitted laws ("bootstrap_laws":
// [E, A, B, alpha, beta] each, null where a refit had no answer). A ladder
// the law cannot be fitted to gives {"error": why}, not an error.
Result<nlohmann::json> fit_candidate_ladder(const ArchSpec& spec, const std::string& results_path);

}  // namespace mt
