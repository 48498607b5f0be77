// sweep_config.cpp — see sweep_config.h.
#include "sweep/runner/sweep_config.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "core/config_schema.h"

namespace fs = std::filesystem;

namespace mt {

void declare_keys(ConfigSchema& s, SweepConfig& c) {
  s.add("sweep.base", &c.base, "run config every run starts from (relative to this file)").required();
  s.add("sweep.set", &c.set, "overrides applied to every run, as with --set");
  s.add("sweep.seed", &c.seed, "the search's random streams (the runs' own seeds come from the base)");
  s.add("sweep.runs", &c.runs, "runs in all").range(2, 100000);
  s.add("sweep.batch", &c.batch,
        "suggestions per round: each from the runs of the rounds before, so results do "
        "not depend on --jobs")
      .range(1, 1024);
  s.add("sweep.initial", &c.initial, "runs drawn around the centre before the surrogates choose").range(1, 100000);
  s.add("sweep.head_dim", &c.head_dim, "a width param: n_heads = d_model / head_dim").range(2, 1 << 16);
  s.add("sweep.expert_ratio", &c.expert_ratio, "a width param: d_expert = ratio x d_model")
      .min(0)
      .note("0 = the base's");
  s.add("sweep.ffn_ratio", &c.ffn_ratio, "a width param: d_ff = ratio x d_model").min(0).note("0 = the base's");
  s.add("sweep.at_costs", &c.at_costs,
        "costs in training FLOPs (a ladder rung's, the hero run's) to write a run config for: each numeric setting "
        "from its power law along the front (within its bounds; the model's size and tokens carried past theirs beyond "
        "the front's costs), "
        "a choice from the front run nearest in cost, then the tokens that give the cost")
      .above(0)
      .note("[] = none");
  s.add("sweep.focus_costs", &c.focus_costs,
        "costs in training FLOPs the search targets in turn, at or below each (e.g. the rungs a study compares "
        "at); an extension of CARBS, whose targets span the whole front")
      .above(0)
      .note("[] = the whole front");
  s.add("sweep.check_at_costs", &c.check_at_costs,
        "after the sweep, train each at_costs config and record its held-out loss next to the front's prediction "
        "(front.json, the report)");
  s.add_table_array<SweepParamSpec>(
       "param", &c.specs,
       [](ConfigSchema& r, SweepParamSpec& p) {
         r.add("key", &p.key,
               "a run key (\"train.lr\"), or width (model.d_model by the width rule) or tokens "
               "(the training budget)")
             .required();
         r.add_choice("scale", &p.scale, {"log", "linear", "log_int", "int", "choice"},
                      "log: log-uniform; linear: uniform; log_int, int: integers on those scales; choice: one of "
                      "`choices`");
         r.add("min", &p.min, "lower bound (not for choice)");
         r.add("max", &p.max, "upper bound (not for choice)");
         r.add("center", &p.center, "where the search starts (a choice: the index of its value)").required();
         r.add("radius", &p.radius, "std of the search distribution in unit coordinates (the range is 1)")
             .above(0)
             .max(1);
         r.add("choices", &p.choices, "a choice's values, each as TOML (\"\\\"muon\\\"\", \"64\")");
       },
       "one table per hyperparameter")
      .required();
}

Result<SweepConfig> load_sweep_config(const std::string& path, const std::vector<std::string>& overrides) {
  SweepConfig c;
  c.source = path;
  ConfigSchema s("sweep file");
  declare_keys(s, c);
  ConfigOrigins o;
  MT_RETURN_IF_ERROR(s.load_file(path, overrides, o));
  if (!c.base.empty() && !fs::path(c.base).is_absolute())
    c.base = (fs::path(path).parent_path() / c.base).lexically_normal().string();
  std::set<std::string> keys;
  for (size_t i = 0; i < c.specs.size(); ++i) {
    const SweepParamSpec& p = c.specs[i];
    const std::string at = fmt::format("param[{}]", i);
    if (!keys.insert(p.key).second) return o.error(at + ".key", fmt::format("\"{}\" is swept twice", p.key));
    SweepParam q;
    q.key = p.key;
    q.radius = p.radius;
    if (p.scale == "choice") {
      if (p.choices.size() < 2) return o.error(at + ".choices", "a choice needs at least two values");
      q.scale = ParamScale::kChoice;
      q.lo = 0;
      q.hi = double(p.choices.size() - 1);
      q.choices = p.choices;
      if (p.center < 0 || p.center > q.hi || p.center != std::floor(p.center))
        return o.error(at + ".center", fmt::format("must be the index of one of the {} choices", p.choices.size()));
      q.center = p.center;
    } else {
      q.scale = p.scale == "log"       ? ParamScale::kLog
                : p.scale == "linear"  ? ParamScale::kLinear
                : p.scale == "log_int" ? ParamScale::kLogInt
                                       : ParamScale::kLinearInt;
      if (!(p.max > p.min)) return o.error(at + ".max", fmt::format("must be above min = {}", p.min));
      if ((q.scale == ParamScale::kLog || q.scale == ParamScale::kLogInt) && !(p.min > 0))
        return o.error(at + ".min", "must be > 0 on a log scale");
      if (p.center < p.min || p.center > p.max)
        return o.error(at + ".center", fmt::format("must lie in [min, max] = [{}, {}]", p.min, p.max));
      q.lo = p.min;
      q.hi = p.max;
      q.center = p.center;
    }
    if (p.key == "width" && q.scale != ParamScale::kLogInt && q.scale != ParamScale::kLinearInt)
      return o.error(at + ".scale", "width is an integer: log_int or int");
    c.params.push_back(q);
  }
  if (c.initial > c.runs) return o.error("sweep.initial", fmt::format("must be at most sweep.runs = {}", c.runs));
  return c;
}

std::vector<std::string> sweep_sets(const SweepConfig& c, const std::vector<double>& settings, int64_t tokens_per_step,
                                    int64_t kv_heads) {
  std::vector<std::string> sets = c.set;
  for (size_t i = 0; i < c.params.size(); ++i) {
    const SweepParam& p = c.params[i];
    const double x = settings[i];
    if (p.key == "width") {
      // A whole number of heads, a multiple of the kv heads.
      const int64_t step = c.head_dim * std::max<int64_t>(1, kv_heads);
      const int64_t d = step * std::max<int64_t>(1, std::llround(x / double(step)));
      sets.push_back(fmt::format("model.d_model={}", d));
      sets.push_back(fmt::format("model.n_heads={}", d / c.head_dim));
      if (c.expert_ratio > 0)
        sets.push_back(
            fmt::format("model.d_expert={}", std::max<int64_t>(1, std::llround(c.expert_ratio * double(d)))));
      if (c.ffn_ratio > 0)
        sets.push_back(fmt::format("model.d_ff={}", std::max<int64_t>(1, std::llround(c.ffn_ratio * double(d)))));
    } else if (p.key == "tokens") {
      sets.push_back(fmt::format("train.steps={}", std::max<int64_t>(1, std::llround(x / double(tokens_per_step)))));
    } else {
      sets.push_back(p.key + "=" + param_value_toml(p, x));
    }
  }
  return sets;
}

}  // namespace mt
