// arch_compare.cpp — see arch_compare.h. Orchestration only: each factor is
// computed by its own file and recorded through cached_step.
#include "arch/arch_compare.h"

#include <fmt/format.h>

#include <filesystem>

#include "arch/arch_measure.h"
#include "arch/arch_plan.h"
#include "arch/arch_rank.h"
#include "arch/arch_report.h"
#include "arch/arch_step.h"
#include "core/file_io.h"
#include "core/subprocess.h"

namespace fs = std::filesystem;

namespace mt {

using json = nlohmann::json;

Result<ArchComparePlan> plan_arch_compare(const ArchSpec& spec, const std::string& out_dir) {
  ArchComparePlan p;
  p.out_dir = out_dir;
  for (const ArchCandidate& c : spec.candidates) {
    auto l = plan_candidate_ladder(spec, c, out_dir + "/ladder/" + c.name);
    if (!l) return l.status();
    p.ladders.push_back(std::move(l.value()));
    auto hero = plan_candidate(spec, c);  // pure and quick: a refused hero plan is a spec error
    if (!hero) return hero.status();
    p.hero.push_back(std::move(hero.value()));
  }
  return p;
}

OutputOwner arch_owner(const ArchSpec& spec, const ArchComparePlan& plan) {
  OutputOwner o;
  o.command = "arch compare";
  o.config = flatten_toml(arch_spec_toml(spec));
  for (size_t i = 0; i < spec.candidates.size(); ++i)
    for (auto& [unit, keys] : ladder_owner(plan.ladders[i].plan).parts)
      o.parts[spec.candidates[i].name + "/" + unit] = keys;
  return o;
}

namespace {

// A record computed from other files is recomputed when what it was computed from changed
// (a rung added to the ladder): `still_valid` compares.
Result<json> cached_if(const std::string& path, const std::function<bool(const json&)>& still_valid,
                       const std::function<Result<json>()>& compute) {
  if (fs::exists(path)) {
    auto old = cached_step(path, compute);
    if (!old) return old.status();
    if (still_valid(old.value())) return old;
    std::error_code ec;
    fs::remove(path, ec);
  }
  return cached_step(path, compute);
}

}  // namespace

Result<json> run_arch_compare(const ArchSpec& spec, const ArchComparePlan& plan, const ArchCompareOptions& opt) {
  const std::string& dir = plan.out_dir;
  std::error_code ec;
  fs::create_directories(dir + "/logs", ec);
  if (ec) return Status::errorf("{}: cannot create: {}", dir, ec.message());
  auto self = self_executable();
  if (!self) return self.status();
  const MeasureContext ctx{self.value(), dir + "/logs"};
  const size_t n = spec.candidates.size();
  std::vector<CandidateRecords> rec(n);
  auto say = [&](const ArchCandidate& c, const std::string& what) {
    fmt::print(stderr, "# arch: {} — {}\n", c.name, what);
  };

  // (b) and inference footprint: the planner (pure).
  for (size_t i = 0; i < n; ++i) {
    const ArchCandidate& c = spec.candidates[i];
    auto r = cached_step(fmt::format("{}/{}.plan.json", dir, c.name), [&]() -> Result<json> { return plan.hero[i]; });
    if (!r) return r.status();
    rec[i].plan = std::move(r.value());
  }
  // (a) and (c): measured one at a time, nothing else of the comparison running.
  for (size_t i = 0; i < n; ++i) {
    const ArchCandidate& c = spec.candidates[i];
    auto r = cached_step(fmt::format("{}/{}.bench.json", dir, c.name), [&] {
      say(c, fmt::format("bench {} ({} steps)", spec.bench_preset, spec.bench_steps));
      return measure_bench(ctx, spec, c, 1);
    });
    if (!r) return r.status();
    rec[i].bench = std::move(r.value());
  }
  for (size_t i = 0; i < n; ++i) {
    const ArchCandidate& c = spec.candidates[i];
    auto r = cached_step(fmt::format("{}/{}.ep.json", dir, c.name), [&]() -> Result<json> {
      if (spec.ep_ranks < 2) return json{{"skipped", "bench.ep_ranks < 2"}};
      say(c, fmt::format("bench under {} -np {}, dist.ep = {}", spec.mpirun, spec.ep_ranks, spec.ep_ranks));
      return measure_bench(ctx, spec, c, spec.ep_ranks);
    });
    if (!r) return r.status();
    rec[i].ep = std::move(r.value());
  }
  // (d): every candidate's ladder in one queue, then the fits.
  std::vector<LadderJob> jobs;
  for (const CandidateLadder& l : plan.ladders) jobs.push_back({&l.config, &l.plan});
  LadderRunOptions lo;
  lo.jobs = opt.jobs;
  lo.progress = opt.progress;
  lo.label = "arch ladders";
  auto results = run_ladders(jobs, lo);
  if (!results) return results.status();
  for (size_t i = 0; i < n; ++i) {
    const ArchCandidate& c = spec.candidates[i];
    const std::string& path = results.value()[i];
    auto fresh = [&] { return fit_candidate_ladder(spec, path); };
    auto r = cached_if(
        fmt::format("{}/{}.fit.json", dir, c.name),
        [&](const json& old) {
          auto now = ladder_runs(path);
          return now && old.value("runs", json()) == now.value();
        },
        fresh);
    if (!r) return r.status();
    rec[i].fit = std::move(r.value());
  }
  // Inference: decode throughput on each candidate's largest rung, again one at a time.
  for (size_t i = 0; i < n; ++i) {
    const ArchCandidate& c = spec.candidates[i];
    const std::string& run = plan.ladders[i].largest_run_dir;
    const std::string name = fs::path(run).lexically_relative(dir).string();
    auto r = cached_if(
        fmt::format("{}/{}.decode.json", dir, c.name),
        [&](const json& old) { return old.value("run", std::string()) == name; },
        [&] {
          say(c, fmt::format("generate {} tokens from {}", spec.decode_tokens, run));
          return measure_decode(ctx, spec, c, run, name);
        });
    if (!r) return r.status();
    rec[i].decode = std::move(r.value());
  }
  json cmp = compare_json(spec, rec);
  MT_RETURN_IF_ERROR(write_file_atomic(dir + "/compare.json", cmp.dump(1) + "\n"));
  MT_RETURN_IF_ERROR(write_file_atomic(dir + "/report.html", compare_html(cmp)));
  return cmp;
}

}  // namespace mt
