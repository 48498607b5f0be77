// arch_ladder.cpp — see arch_ladder.h.
#include "arch/arch_ladder.h"

#include <fmt/format.h>

#include "ladder/analysis.h"
#include "ladder/results.h"

namespace mt {

using json = nlohmann::json;

Result<CandidateLadder> plan_candidate_ladder(const ArchSpec& spec, const ArchCandidate& c,
                                              const std::string& out_dir) {
  CandidateLadder l;
  auto cfg = load_ladder_config(spec.ladder, {});
  if (!cfg) return cfg.status();
  l.config = std::move(cfg.value());
  l.config.set.insert(l.config.set.end(), c.ladder.begin(), c.ladder.end());
  auto plan = plan_ladder(l.config, out_dir);
  if (!plan) return Status::errorf("candidate {}: {}", c.name, plan.status().message());
  l.plan = std::move(plan.value());
  l.largest_run_dir = l.plan.units[l.plan.rungs.back().units.back()].dir;
  return l;
}

namespace {

json runs_json(const std::vector<ladder::Run>& runs) {
  json out = json::array();
  for (const ladder::Run& r : runs)
    out.push_back({{"name", r.name},
                   {"active_params", r.active_params},
                   {"tokens", r.tokens},
                   {"flops", r.flops},
                   {"loss", r.loss}});
  return out;
}

}  // namespace

Result<json> ladder_runs(const std::string& results_path) {
  auto runs = ladder::load_results(results_path);
  if (!runs) return runs.status();
  return runs_json(runs.value());
}

Result<json> fit_candidate_ladder(const ArchSpec& spec, const std::string& results_path) {
  auto runs = ladder::load_results(results_path);
  if (!runs) return runs.status();
  json j;
  j["runs"] = runs_json(runs.value());
  ladder::LadderOptions opt;
  opt.bootstrap = {spec.bootstrap, spec.seed, spec.level};
  auto a = ladder::analyze(runs.value(), opt);
  if (!a) {
    j["error"] = a.status().message();
    return j;
  }
  const ladder::Law& law = a->fit.law;
  j["law"] = {{"E", law.E}, {"A", law.A}, {"B", law.B}, {"alpha", law.alpha}, {"beta", law.beta}};
  auto est = [](const ladder::Estimate& e) {
    return json{{"value", e.value}, {"se", e.se}, {"lo", e.lo}, {"hi", e.hi}};
  };
  const ladder::LawEstimates& e = a->estimates;
  j["estimates"] = {{"E", est(e.E)}, {"A", est(e.A)}, {"B", est(e.B)}, {"alpha", est(e.alpha)}, {"beta", est(e.beta)}};
  j["objective"] = a->fit.objective;
  j["bootstrap_laws"] = json::array();
  for (const ladder::Law& b : a->bootstrap_laws) j["bootstrap_laws"].push_back({b.E, b.A, b.B, b.alpha, b.beta});
  return j;
}

}  // namespace mt
