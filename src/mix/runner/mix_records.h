// mix_records.h — what a finished proxy recorded (DIR/proxies.jsonl): its
// mixture, every bucket's held-out loss (and bits per byte, task results
// and text sets' bits per byte when the target needs `moetrain eval`), the
// target's value, and the
// ledger check against its hero-scale plan; and the records an earlier
// invocation left, so a restarted search trains only what is missing.
#pragma once
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "data/mixture.h"
#include "mix/runner/mix_config.h"
#include "mix/runner/mix_search.h"
#include "mix/runner/mix_space.h"
#include "train/post_eval.h"

namespace mt {

// A target term's value in a proxy's record (NaN when the record lacks it).
double term_value(const TargetTerm& t, const nlohmann::json& rec);

// Run r's record from its run directory at its final step (steps x r.scale):
// errors when a figure is missing or a bucket's ledger strays more than one
// sequence from the plan.
Result<nlohmann::json> read_run(const MixSpace& s, const EvalTargets& eval, const MixRun& r, const MixturePlan& plan,
                                const std::string& dir, int64_t steps, const std::string& log);

// The records in `path` by run name, less those missing a figure the
// target now needs (those runs are scored again).
std::map<std::string, nlohmann::json> recorded_proxies(const std::string& path, const MixSearchConfig& c,
                                                       const MixSpace& s);

}  // namespace mt
