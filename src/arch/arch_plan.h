// arch_plan.h — factor (b) and the expert-parallel half of (c) of `moetrain
// arch compare`: the planner (plan/plan.h) on the candidate's hero model at
// the spec's cluster and layout, for the tokens hero.flops buys it. Its MFU
// and step time come with the planner's sources per term (fitted, published
// or measured figures: docs/planner.md); the EP share is the all-to-all's
// exposed time over the step. Also the inference footprint at the spec's
// context (KV cache per token and per sequence, recurrent state). Pure:
// same inputs, same record.
#pragma once
#include <nlohmann/json.hpp>

#include "arch/arch_spec.h"
#include "core/status.h"

namespace mt {

// The record: hero N (active matmul parameters, as the ladder counts them),
// tokens, step time, MFU, tokens/s, days, EP shares, sources, warnings, and
// "inference". Errors (user-caused): the hero model, cluster or layout with
// the candidate's keys cannot be read or laid out.
Result<nlohmann::json> plan_candidate(const ArchSpec& spec, const ArchCandidate& c);

}  // namespace mt
