// arch_spec.cpp — see arch_spec.h.
#include "arch/arch_spec.h"

#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "core/config_schema.h"

namespace fs = std::filesystem;

namespace mt {

const char* rank_by_name(RankBy r) {
  return r == RankBy::kLossAtEqualCompute ? "loss_at_equal_compute" : "loss_at_equal_wallclock";
}

void declare_keys(ConfigSchema& s, ArchSpec& c) {
  s.add("arch.ladder", &c.ladder,
        "ladder file (docs/ladder.md) trained once per candidate, the candidate's `ladder` keys added to its "
        "ladder.set (relative to this file)")
      .required();
  s.add_enum("arch.rank_by", &c.rank_by, {"loss_at_equal_compute", "loss_at_equal_wallclock"},
             "ranking rule: the projected hero loss at hero.flops, or at the wall-clock the first candidate needs "
             "for hero.flops on the target cluster (each candidate's tokens from its planned step time)");
  s.add("arch.bootstrap", &c.bootstrap, "bootstrap resamples of each candidate's L(N, D) fit").range(0, 100000);
  s.add("arch.level", &c.level, "interval level of the projected losses").above(0.5).below(1);
  s.add("arch.seed", &c.seed, "bootstrap seed");
  s.add("bench.preset", &c.bench_preset,
        "`moetrain bench --preset` every candidate's benchmark starts from (the common active-parameter budget; "
        "its `bench` keys are --set on top)")
      .required();
  s.add_choice("bench.precision", &c.precision, {"fp32", "bf16"}, "`moetrain bench --precision`");
  s.add("bench.steps", &c.bench_steps, "timed steps after one warm-up step (medians)").range(1, 1000);
  s.add("bench.ep_ranks", &c.ep_ranks,
        "ranks of the expert-parallel measurement (mpirun -np N bench --set dist.ep=N); its comm_wait share is "
        "the measured all-to-all cost")
      .range(0, 64)
      .note("0 = not measured");
  s.add("bench.mpirun", &c.mpirun, "MPI launcher (on PATH, or a path)");
  s.add("hero.model", &c.hero_model, "run config of the hero model the planner projects (relative to this file)")
      .required();
  s.add("hero.cluster", &c.cluster, "cluster file of the target cluster (configs/clusters/, relative to this file)")
      .required();
  s.add("hero.layout", &c.layout, "layout file of the hero run (configs/layouts/, relative to this file)").required();
  s.add("hero.flops", &c.hero_flops, "hero training compute in model FLOPs (model/flops.h, as the ladder's budgets)")
      .above(0)
      .unit("FLOP")
      .required();
  s.add("inference.context", &c.context, "KV cache and recurrent state per sequence are compared at this context")
      .range(1, int64_t(1) << 30)
      .unit("tokens");
  s.add("inference.decode_tokens", &c.decode_tokens,
        "tokens `moetrain generate` decodes from each candidate's largest rung (decode tokens/s)")
      .range(1, 1 << 20);
  s.add_table_array<ArchCandidate>(
       "candidate", &c.candidates,
       [](ConfigSchema& r, ArchCandidate& a) {
         r.add("name", &a.name, "key of its results (DIR/NAME.*.json, DIR/ladder/NAME)").required();
         r.add("label", &a.label, "name in tables and the report").note("\"\" = name");
         r.add("ladder", &a.ladder, "run-config overrides of its ladder runs (\"model.layer_pattern=\\\"LLLG\\\"\")");
         r.add("bench", &a.bench, "overrides of bench.config for its benchmark");
         r.add("hero", &a.hero, "overrides of hero.model for its plan");
       },
       "one table per candidate architecture; the first is the reference of loss_at_equal_wallclock")
      .required();
}

Result<ArchSpec> load_arch_spec(const std::string& path, const std::vector<std::string>& overrides) {
  ArchSpec c;
  c.source = path;
  ConfigSchema s("architecture comparison file");
  declare_keys(s, c);
  ConfigOrigins o;
  MT_RETURN_IF_ERROR(s.load_file(path, overrides, o));
  const fs::path dir = fs::path(path).parent_path();
  for (auto [key, field] : {std::pair<const char*, std::string*>{"arch.ladder", &c.ladder},
                            {"hero.model", &c.hero_model},
                            {"hero.cluster", &c.cluster},
                            {"hero.layout", &c.layout}}) {
    if (!fs::path(*field).is_absolute()) *field = (dir / *field).lexically_normal().string();
    if (!fs::is_regular_file(*field)) return o.error(key, fmt::format("no such file: {}", *field));
  }
  if (c.candidates.size() < 2) return o.error("candidate", "a comparison needs at least two [[candidate]] tables");
  std::set<std::string> names;
  for (size_t i = 0; i < c.candidates.size(); ++i) {
    ArchCandidate& a = c.candidates[i];
    const std::string key = fmt::format("candidate[{}].name", i);
    if (a.name.empty() || a.name.find_first_not_of(
                              "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != std::string::npos)
      return o.error(key, fmt::format("'{}': expected letters, digits, '-' or '_' (it names files)", a.name));
    if (!names.insert(a.name).second) return o.error(key, fmt::format("'{}' names a candidate twice", a.name));
    if (a.label.empty()) a.label = a.name;
  }
  return c;
}

std::string arch_spec_toml(const ArchSpec& c) {
  ArchSpec copy = c;
  ConfigSchema s("architecture comparison file");
  declare_keys(s, copy);
  return s.to_toml();
}

}  // namespace mt
