// analysis.h — `moetrain ladder fit` as one library call: from validated runs
// to the fitted law with bootstrap errors, the isoFLOP fit when the data allow
// it, the downstream sigmoids and the projections the user asked for. Each
// step lives in its own file (fit_law, bootstrap, isoflop, downstream,
// projection); this one wires them and is what the CLI and the tests call.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "ladder/bootstrap.h"
#include "ladder/downstream.h"
#include "ladder/fit_law.h"
#include "ladder/isoflop.h"
#include "ladder/law.h"
#include "ladder/projection.h"
#include "ladder/results.h"

namespace mt::ladder {

// What to project (0 = not asked).
struct Target {
  double params = 0, tokens = 0;  // a run of N parameters (counted as the fit's N) on D tokens
  double flops = 0;               // a compute budget C = 6 N D
  double tokens_per_param = 0;    // with flops: also the split of C at this D / N
  double sparsity = 0;            // G at the target; required iff the law has the sparsity term
};

struct LadderOptions {
  ParamCount param_count = ParamCount::kActive;
  Sparsity sparsity = Sparsity::kNone;
  int64_t drop_highest_loss = 0;  // leave out the K runs with the highest loss (Besiroglu et al.: 5)
  FitOptions fit;
  BootstrapOptions bootstrap;
  IsoflopOptions isoflop;
  Target target;
  // Runs left out of the fit and predicted from it instead (by name): the
  // check that a ladder predicts a larger rung it never saw.
  std::vector<std::string> hold_out;
  std::map<std::string, double> chance;  // task -> chance accuracy, the sigmoid's floor (default 0)
};

struct LawEstimates {
  Estimate E, A, B, alpha, beta, gamma;  // gamma only with the sparsity term
};

// One projected run, each number with its bootstrap spread.
struct ProjectedRun {
  Estimate N, D, tokens_per_param, loss;
  std::map<std::string, Estimate> accuracy;  // per fitted downstream task
};

struct Projection {
  std::optional<ProjectedRun> at_size;          // target params and tokens
  std::optional<ProjectedRun> compute_optimal;  // at target flops
  std::optional<ProjectedRun> at_ratio;         // at target flops and tokens per parameter
  // Approach 2's N*(C) and D*(C) at target flops, when the isoFLOP fit exists.
  std::optional<double> isoflop_N, isoflop_D;
};

// A held-out run: the law's prediction at its (N, D) against what it measured.
struct HeldOutRun {
  Run run;
  Estimate predicted;   // loss, with its bootstrap interval
  double error = 0;     // predicted / observed - 1
  bool inside = false;  // observed within the interval
};

struct Analysis {
  LadderOptions options;
  int64_t runs_read = 0;
  std::vector<Run> used;     // runs fitted
  std::vector<Run> dropped;  // highest-loss runs left out
  std::vector<HeldOutRun> held_out;
  LawFit fit;
  LawEstimates estimates;
  IsoflopFit isoflop;
  std::vector<DownstreamFit> downstream;
  Projection projection;
  // The law refitted on each bootstrap resample (NaN fields where a refit had no answer): for
  // projections along a curve (`moetrain arch compare`'s loss against compute, with its band).
  std::vector<Law> bootstrap_laws;
  std::vector<std::string> notes;  // what was skipped, and why
};

// Errors (user-caused, exit code 2 in the CLI): nothing left after dropping,
// a fit the data cannot identify, a target inconsistent with the options.
Result<Analysis> analyze(const std::vector<Run>& runs, const LadderOptions& opt);

}  // namespace mt::ladder
