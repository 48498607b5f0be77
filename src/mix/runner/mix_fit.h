// mix_fit.h — from the proxies' records to the regressor's mixture: both
// regressors checked on the held-out proxies (Spearman, Pearson, mean
// absolute error), the chosen one refitted on every proxy, and the capped
// simplex searched with it (mix/search.h).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "mix/regressor.h"
#include "mix/runner/mix_config.h"
#include "mix/runner/mix_search.h"
#include "mix/runner/mix_space.h"
#include "mix/search.h"
#include "mix/target_model.h"

namespace mt {

struct FittedTarget {
  std::string chosen;  // the regressor fitted on every proxy
  mix::RegressorKind kind = mix::RegressorKind::kLogLinear;
  std::vector<std::vector<double>> X, Y;  // what it was fitted on: domain weights, target columns
  std::vector<double> lambda;             // the target's weights
  mix::TargetModel model;
  mix::SearchResult best;  // the search over the capped simplex
};

// Checks both regressors on the held-out proxies (into result["regressors"]),
// fits the chosen one on all of them and searches the simplex with it.
// proxies: the first c.proxies records, runs[k] the mixture of proxies[k].
Result<FittedTarget> fit_target(const MixSearchConfig& c, const MixSpace& s, const std::vector<MixRun>& runs,
                                const std::vector<nlohmann::json>& proxies, nlohmann::json& result);

}  // namespace mt
