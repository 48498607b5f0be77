// data_phase_plan.cpp — see data_phase_plan.h.
#include "cli/data_phase_plan.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "data/dataset.h"
#include "train/phased_data.h"

namespace mt {

ExitCode run_phase_plan(const std::string& dataset_dir, const RunConfig& given, bool as_json) {
  using json = nlohmann::json;
  RunConfig cfg = given;
  cfg.data.dataset = dataset_dir;
  auto sched = PhaseSchedule::make(cfg);
  if (!sched) return fail("data plan", sched.status(), ExitCode::kUsage);
  auto ds = Dataset::open(dataset_dir, ShardVerify::kHeadersOnly);
  if (!ds) return fail("data plan", ds.status());
  auto plans = plan_segments(*ds.value(), *sched);
  if (!plans) return fail("data plan", plans.status(), ExitCode::kUsage);
  const Status ok = check_segments(*plans, *sched);
  // Each phase's tokens per bucket, read off the samplers (exact) when the plan holds.
  std::vector<std::vector<std::pair<std::string, int64_t>>> per_phase;
  std::vector<std::string> names;  // every phase's buckets, in the ledger's order
  if (ok) {
    auto data = PhasedData::open(cfg, *sched);
    if (!data) return fail("data plan", data.status());
    for (size_t p = 0; p < sched->phases().size(); ++p) per_phase.push_back((*data)->phase_ledger(p));
    names = (*data)->bucket_names();
  }
  json j;
  j["ok"] = ok.is_ok();
  j["phases"] = json::array();
  for (size_t p = 0; p < sched->phases().size(); ++p) {
    const PhaseSpan& ph = sched->phases()[p];
    json e = {{"name", ph.name},
              {"first_step", ph.first_step},
              {"steps", ph.steps},
              {"global_batch", ph.global_batch},
              {"ramp_from", ph.ramp_from},
              {"seq_len", ph.seq_len},
              {"sequences", ph.sequences},
              {"tokens", ph.tokens()},
              {"segment", ph.segment},
              {"mixture", ph.mixture},
              {"lr", lr_segment_name(ph.lr)}};
    if (!per_phase.empty()) {
      e["bucket_tokens"] = json::object();
      for (const auto& [name, tokens] : per_phase[p]) e["bucket_tokens"][name] = tokens;
    }
    j["phases"].push_back(e);
  }
  j["segments"] = json::array();
  for (size_t i = 0; i < plans->size(); ++i) {
    const SegmentMixture& m = (*plans)[i];
    json seg = {{"label", m.label},
                {"mixture", m.mixture.source},
                {"reads", sched->segments()[i].sequences},
                {"sequences", m.plan.sequences},
                {"full_sequences", m.plan.full_sequences},
                {"scale", fmt::format("{}/{}", m.plan.scale_num, m.plan.scale_den)},
                {"violations", m.plan.violations}};
    seg["buckets"] = json::array();
    for (const BucketPlan& b : m.plan.buckets)
      seg["buckets"].push_back({{"name", b.name},
                                {"weight", b.weight},
                                {"full_sequences", b.full_sequences},
                                {"sequences", b.sequences},
                                {"tokens_before", b.tokens_before},
                                {"tokens_wanted", b.tokens_wanted},
                                {"tokens_available", b.tokens_available},
                                {"epochs", b.epochs}});
    j["segments"].push_back(seg);
  }
  if (as_json) {
    fmt::print("{}\n", j.dump(1));
  } else {
    fmt::print("run {} on {}: {} phases, {} steps, {} tokens; {} data segment{} over one pool of documents\n",
               cfg.source, dataset_dir, sched->phases().size(), sched->total_steps(), sched->total_tokens(),
               plans->size(), plans->size() == 1 ? "" : "s");
    fmt::print("{:<4} {:<20} {:>8} {:>12} {:>14} {:>8} {:>9}  {}\n", "", "phase", "steps", "batch", "tokens", "segment",
               "lr", "mixture");
    for (size_t p = 0; p < sched->phases().size(); ++p) {
      const PhaseSpan& ph = sched->phases()[p];
      fmt::print(
          "{:<4} {:<20} {:>8} {:>12} {:>14} {:>8} {:>9}  {}\n", p, ph.name.substr(0, 20), ph.steps,
          ph.ramp_from > 0 ? fmt::format("{}->{}", ph.ramp_from, ph.global_batch) : fmt::format("{}", ph.global_batch),
          ph.tokens(), ph.segment, lr_segment_name(ph.lr), ph.mixture);
    }
    for (const SegmentMixture& m : *plans) {
      fmt::print("\nsegment {}: {} at scale {}/{}: {} of {} sequences of {} tokens\n", m.label, m.mixture.source,
                 m.plan.scale_num, m.plan.scale_den, m.plan.sequences, m.plan.full_sequences, m.plan.seq_len);
      fmt::print("{:<28} {:>8} {:>14} {:>14} {:>14} {:>8}\n", "bucket", "weight", "taken before", "tokens wanted",
                 "available", "epochs");
      for (const BucketPlan& b : m.plan.buckets)
        fmt::print("{:<28} {:>8.4f} {:>14} {:>14} {:>14} {:>8.3f}\n", b.name, b.weight, b.tokens_before,
                   b.tokens_wanted, b.tokens_available, b.epochs);
    }
    if (!per_phase.empty()) {
      fmt::print("\ntokens per bucket and phase (as the trainer reads them):\n{:<28}", "bucket");
      for (const PhaseSpan& ph : sched->phases()) fmt::print(" {:>14}", ph.name.substr(0, 14));
      fmt::print("\n");
      for (const std::string& name : names) {
        fmt::print("{:<28}", name);
        for (const auto& l : per_phase) {
          int64_t t = 0;
          for (const auto& [n, tokens] : l)
            if (n == name) t = tokens;
          fmt::print(" {:>14}", t);
        }
        fmt::print("\n");
      }
    }
  }
  if (!ok) return fail("data plan", ok, ExitCode::kRefused);
  return ExitCode::kOk;
}

}  // namespace mt
