// arch_spec.h — the file `moetrain arch compare` reads (docs/architectures.md):
// the candidate architectures, each as `set` keys at three scales (the small
// ladder it is trained on, the benchmark config it is timed on, the hero model
// the planner projects), the ladder, the hero target (compute, cluster and
// layout files), the benchmark settings and the ranking rule. Paths are
// relative to the spec file. Every key is checked before anything runs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace mt {

class ConfigSchema;

// One [[candidate]] table.
struct ArchCandidate {
  std::string name;                 // file-name-safe key: its results are DIR/NAME.*.json and DIR/ladder/NAME
  std::string label;                // for tables and the report ("GQA, sliding window (LLLG)")
  std::vector<std::string> ladder;  // run-config overrides added to the ladder's ladder.set
  std::vector<std::string> bench;   // overrides of the bench config
  std::vector<std::string> hero;    // overrides of the hero model
};

// How candidates are ranked (stated in every output).
enum class RankBy {
  kLossAtEqualCompute,    // projected hero loss at hero.flops model FLOPs
  kLossAtEqualWallclock,  // projected hero loss for the wall-clock the first candidate needs for hero.flops,
                          // each candidate's tokens from its planned step time on the target cluster
};
const char* rank_by_name(RankBy r);

struct ArchSpec {
  // [arch]
  std::string ladder;  // ladder file (ladder/runner/ladder_run.h), run once per candidate
  RankBy rank_by = RankBy::kLossAtEqualWallclock;
  int64_t bootstrap = 200;  // resamples of each candidate's fit
  double level = 0.9;       // interval level of the projections
  uint64_t seed = 0;        // bootstrap seed
  // [bench]: `moetrain bench` on this machine, one candidate at a time (nothing else of the compare runs beside it)
  std::string bench_preset;  // `moetrain bench --preset`: the config at the common active budget
  std::string precision = "fp32";
  int64_t bench_steps = 3;        // timed steps after one warm-up
  int64_t ep_ranks = 2;           // the all-to-all measurement: mpirun -np N bench --set dist.ep=N; 0 = skipped
  std::string mpirun = "mpirun";  // the launcher (a name on PATH or a path)
  // [hero]
  std::string hero_model;  // run config of the hero model (the planner reads its [model] and train.seq_len)
  std::string cluster;     // cluster file of the target cluster
  std::string layout;      // layout file of the hero run
  double hero_flops = 0;   // hero compute, model FLOPs (model/flops.h), as the ladder's budgets
  // [inference]
  int64_t context = 32768;     // KV cache and state per sequence at this context (hero model)
  int64_t decode_tokens = 32;  // tokens `generate` decodes from each candidate's largest rung
  std::vector<ArchCandidate> candidates;
  std::string source;  // the spec file
};

void declare_keys(ConfigSchema& s, ArchSpec& c);

// Reads and checks the file (candidate names unique and file-name safe, the
// files it names exist); errors name the file and key.
Result<ArchSpec> load_arch_spec(const std::string& path, const std::vector<std::string>& overrides);

// The resolved spec as canonical TOML (defaults included): the output directory's stamp and compare.json.
std::string arch_spec_toml(const ArchSpec& c);

}  // namespace mt
