// sweep_config.h — the file `moetrain sweep` reads: the run config every run
// starts from, the search (seed, runs, rounds of `batch` suggestions, the
// runs drawn around the centre first) and one [[param]] per hyperparameter:
// any run key ("train.lr", "train.warmup_steps", "model.n_layers"), or
//   width:  model.d_model, with n_heads = d_model / sweep.head_dim and expert
//           and FFN widths by sweep.expert_ratio / sweep.ffn_ratio (the
//           ladder's width rule, ladder/runner/ladder_run.h);
//   tokens: the training budget, as train.steps = tokens / (batch_size x seq_len).
// A run's cost is its training FLOPs (model/flops.h x tokens), known before
// it runs; its value is its final held-out loss. Format: docs/sweep.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "sweep/space.h"

namespace mt {

class ConfigSchema;

// A [[param]] table as written; load_sweep_config checks it into a SweepParam.
struct SweepParamSpec {
  std::string key, scale = "log";
  double min = 0, max = 0, center = 0, radius = 0.15;
  std::vector<std::string> choices;
};

struct SweepConfig {
  std::string base;              // run config (relative to the sweep file until loaded)
  std::vector<std::string> set;  // overrides of every run, as with --set
  uint64_t seed = 1;
  int64_t runs = 16;                  // runs in all
  int64_t batch = 2;                  // suggestions per round, each from the runs of the rounds before
  int64_t initial = 6;                // runs drawn around the centre before the surrogates choose
  int64_t head_dim = 32;              // width: n_heads = d_model / head_dim
  double expert_ratio = 0.0;          // width: d_expert = ratio x d_model; 0 = the base's
  double ffn_ratio = 0.0;             // width: d_ff = ratio x d_model; 0 = the base's
  std::vector<double> at_costs;       // costs (FLOPs) to write a run config for, from the front's power laws
  bool check_at_costs = false;        // train those configs afterwards: the prediction checked
  std::vector<double> focus_costs;    // costs the search targets in turn (carbs.h); [] = the whole front
  std::vector<SweepParamSpec> specs;  // [[param]] as read
  std::vector<SweepParam> params;     // the same, checked (load_sweep_config)
  std::string source;                 // the sweep file
};

void declare_keys(ConfigSchema& s, SweepConfig& c);
// Reads and checks the file: every param's bounds, centre and scale (errors
// name the file, the param and the key).
Result<SweepConfig> load_sweep_config(const std::string& path, const std::vector<std::string>& overrides);

// The --set overrides that give `settings` (natural units, one per param).
// A width becomes a whole number of heads, a multiple of `kv_heads` (the
// base's n_kv_heads, which must divide n_heads); tokens whole steps of
// `tokens_per_step`.
std::vector<std::string> sweep_sets(const SweepConfig& c, const std::vector<double>& settings, int64_t tokens_per_step,
                                    int64_t kv_heads);

}  // namespace mt
