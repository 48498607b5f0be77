// sweep_run.h — `moetrain sweep SWEEP.toml --out DIR`: a cost-aware
// hyperparameter search (sweep/carbs.h) whose runs are `moetrain train`
// children of the run queue (train/run_queue.h). Runs go in rounds of
// sweep.batch: every suggestion of a round comes from the runs of the rounds
// before it, so the runs, and so the results, do not depend on --jobs; a
// sweep killed at any point and started again skips what results.jsonl
// records, resumes unfinished runs from their checkpoints and ends with the
// same files. A run that diverges (exit 1) or whose settings the trainer
// refuses (exit 2, or a config that does not parse) is recorded with its
// reason and counts against its region of the space; the search goes on.
//
// DIR holds NAME/ (each run's directory, s000, s001, ...), logs/NAME.log,
// results.jsonl (one line per finished run, in run order), front.json (the
// cost/value front, per numeric hyperparameter the power law of its value
// on the front against cost, the value GP's leave-one-out predictions),
// settings-at-COST.toml (a run config for each sweep.at_costs) and
// report.html (sweep_report.h). Formats: docs/sweep.md.
#pragma once
#include <cstdint>
#include <string>

#include "core/status.h"
#include "rundir/output_dir.h"
#include "sweep/power_law.h"
#include "sweep/runner/sweep_config.h"
#include "train/run_config.h"

namespace mt {

struct SweepPlan {
  std::string out_dir;
  RunConfig base;               // the base config with sweep.set
  std::string base_text;        // the base file, read once (every candidate's config is parsed from it)
  int64_t tokens_per_step = 0;  // batch_size x seq_len of the base
};

// Checks the base config and the centre's settings before anything trains.
Result<SweepPlan> plan_sweep(const SweepConfig& c, const std::string& out_dir);

// What decides the results, for the output directory's stamp: the sweep
// file's resolved keys and the base run config.
OutputOwner sweep_owner(const SweepConfig& c, const SweepPlan& plan);

struct SweepOptions {
  int64_t jobs = 1;  // runs trained at once
  bool progress = true;
};

// Runs every round not yet recorded; returns the path of front.json.
Result<std::string> run_sweep(const SweepConfig& c, const SweepPlan& plan, const SweepOptions& opt);

}  // namespace mt
