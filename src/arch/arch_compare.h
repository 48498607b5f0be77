// arch_compare.h — `moetrain arch compare SPEC --out DIR`: the lab's four-
// factor architecture decision as one command (docs/architectures.md). For
// each candidate: (a) `moetrain bench` on this machine, (b) the planner at
// the hero scale on the target cluster, (c) the expert-parallel cost measured
// at np = 2 and planned at the hero layout, (d) the small ladder fitted and
// projected to the hero compute with its interval; plus inference cost. The
// measurements run one at a time with nothing else of the comparison beside
// them, then every candidate's ladder as one queue of `jobs` runs. Each step
// is a file under DIR written once (arch_step.h), so a killed comparison
// started again skips what is done and ends with the same files.
//
// DIR holds NAME.plan.json, NAME.bench.json, NAME.ep.json, NAME.fit.json,
// NAME.decode.json per candidate, ladder/NAME/ (its ladder: run directories
// and results.jsonl), logs/ (the measuring children's output), compare.json
// (arch_rank.h) and report.html (arch_report.h).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "arch/arch_ladder.h"
#include "arch/arch_spec.h"
#include "core/status.h"
#include "rundir/output_dir.h"

namespace mt {

struct ArchComparePlan {
  std::string out_dir;
  std::vector<CandidateLadder> ladders;  // per candidate, in spec order
  std::vector<nlohmann::json> hero;      // per candidate: its planned hero run (factor b), computed once
};

// Plans every candidate's ladder and checks its hero plan before DIR is touched.
Result<ArchComparePlan> plan_arch_compare(const ArchSpec& spec, const std::string& out_dir);

// What decides the results, for DIR's stamp: the resolved spec, and every
// candidate's ladder runs as parts (rungs may be added; a changed one is refused).
OutputOwner arch_owner(const ArchSpec& spec, const ArchComparePlan& plan);

struct ArchCompareOptions {
  int64_t jobs = 1;  // ladder runs trained at once
  bool progress = true;
};

// Runs every step not yet recorded; writes compare.json and report.html and returns the comparison.
Result<nlohmann::json> run_arch_compare(const ArchSpec& spec, const ArchComparePlan& plan,
                                        const ArchCompareOptions& opt);

}  // namespace mt
