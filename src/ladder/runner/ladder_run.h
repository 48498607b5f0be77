// ladder_run.h — `moetrain ladder run LADDER.toml`: a scaling ladder of small
// runs, each a model of the same family scaled by a width/depth rule
// (d_model, n_layers per rung; heads from a fixed head dim; expert and FFN
// widths proportional to d_model), trained on the same data mixture for a
// token budget set by a tokens-per-parameter ratio (or a compute budget) per
// rung. Every rung reads a prefix of the same mixture schedule, so a smaller
// rung's data is a proportional subset of a larger one's (data/sampler.h).
// Each rung ends with a held-out loss (per bucket with a dataset), written
// to OUT/results.jsonl in the format `moetrain ladder fit` reads.
//
// Cooldown branches (ladder.cooldowns, fractions f of a rung's budget T): a
// warmup-stable-decay run of f*T steps has the learning rate of the full
// run until its own decay starts at step B = f*T - decay, so the branch is
// the full run stopped at B (a checkpoint) and resumed with train.steps =
// f*T: one rung yields several token budgets for the price of the decays
// (Hagele et al. 2024, "Scaling laws and compute-optimal training beyond
// fixed training durations"). Every rung and branch runs as a `moetrain
// train` child process, `jobs` at once; results do not depend on `jobs`.
// A ladder killed at any point and started again skips what is recorded and
// resumes every unfinished run from its checkpoint, ending with the same
// results file, byte for byte.
//
// With [eval] tasks, every run is then scored by `moetrain eval` on its
// final checkpoint (train/post_eval.h): the results record each task's
// accuracy (eval.metric) as accuracy.TASK, which `ladder fit` fits with the
// loss -> accuracy sigmoid (ladder/downstream.h), and meta.eval keeps acc,
// acc_norm and the held-out bits per byte per bucket.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "rundir/output_dir.h"
#include "train/post_eval.h"
#include "train/run_config.h"

namespace mt {

class ConfigSchema;

struct LadderRung {
  std::string name;      // rung label (its run directory is OUT/NAME)
  int64_t d_model = 0;   // width
  int64_t n_layers = 0;  // depth
  double flops = 0;      // compute budget (6ND-style model FLOPs); 0 = use ladder.tokens_per_param
};

struct LadderConfig {
  std::string base;                  // run config every rung starts from (relative to the ladder file)
  std::vector<std::string> set;      // overrides applied to every rung ("train.lr=1e-3")
  double tokens_per_param = 20.0;    // D = ratio x active matmul parameters
  int64_t head_dim = 32;             // n_heads = d_model / head_dim
  double expert_ratio = 0.0;         // d_expert = ratio x d_model; 0 = the base's
  double ffn_ratio = 0.0;            // d_ff = ratio x d_model; 0 = the base's
  std::vector<double> cooldowns;     // fractions in (0, 1) of each rung's budget that also get a decayed result
  std::vector<LadderRung> rungs;     // [[rung]] tables, run in order
  EvalTargets eval;                  // [eval]: tasks every run is scored on after training
  std::string source;                // the ladder file
};

void declare_keys(ConfigSchema& s, LadderConfig& c);
Result<LadderConfig> load_ladder_config(const std::string& path, const std::vector<std::string>& overrides);

// One result of the ladder: a rung's full run, or one of its cooldown branches.
struct LadderUnit {
  std::string name;  // "r3", or "r3@0.5" for the branch at half the budget
  std::string dir;   // its run directory
  size_t rung = 0;
  int64_t steps = 0;        // its schedule's length
  int64_t branch_step = 0;  // the full run's step it branches from (0: the full run itself)
  double cooldown = 1.0;    // fraction of the rung's budget
  double tokens = 0, flops = 0;
  std::vector<std::string> sets;  // its overrides of the base config
};

struct LadderRungPlan {
  RunConfig cfg;  // the full run's config
  double active = 0, total = 0;
  int64_t steps = 0;
  std::vector<std::string> sets;
  std::vector<size_t> units;  // branches in budget order, then the full run
};

// Every rung and branch, sized and checked before anything trains.
struct LadderPlan {
  std::string base;  // the run config every run starts from
  std::string out_dir;
  std::vector<LadderRungPlan> rungs;
  std::vector<LadderUnit> units;
  double total_flops = 0;  // of every run, branches counted from their branch step
};
Result<LadderPlan> plan_ladder(const LadderConfig& c, const std::string& out_dir);

// What decides the ladder's results, for its output directory's stamp
// (rundir/output_dir.h): each run's resolved config, a part per run, so
// rungs may be added or dropped but a rung whose config changed is refused.
OutputOwner ladder_owner(const LadderPlan& plan);

struct LadderRunOptions {
  int64_t jobs = 1;       // runs trained at once (child processes); the machine's threads are split between them
  bool progress = true;
  // Only these rungs (indices into LadderConfig::rungs; empty = all): one
  // task of a Slurm job array per rung. Tasks may run at once: each merges
  // its results into OUT/results.jsonl under `lock` (core/file_lock.h), so
  // the file ends as one invocation over every rung writes it.
  std::vector<size_t> rungs;
  std::string lock;  // the lock file ("" = no other invocation writes OUT at the same time)
  std::string label = "ladder";  // the progress line's name
};

// `--rung` values (a rung's name, or its index from 0: a job array's
// SLURM_ARRAY_TASK_ID) as indices; an unknown one is an error naming it.
Result<std::vector<size_t>> select_rungs(const LadderConfig& c, const std::vector<std::string>& names);

// Trains every rung and branch not yet in OUT/results.jsonl; returns the
// results path. The caller has claimed OUT (claim_output_dir with ladder_owner).
Result<std::string> run_ladder(const LadderConfig& c, const LadderPlan& plan, const LadderRunOptions& opt);

// Several ladders trained as one queue, `jobs` runs at once across all of
// them (`moetrain arch compare`: a ladder per candidate architecture keeps
// every core busy to the end). Each ladder's results file ends as run_ladder
// writes it alone; returns their paths in order.
struct LadderJob {
  const LadderConfig* config = nullptr;
  const LadderPlan* plan = nullptr;
};
Result<std::vector<std::string>> run_ladders(const std::vector<LadderJob>& ladders, const LadderRunOptions& opt);

}  // namespace mt
