// arch_rank.h — compare.json of `moetrain arch compare`: every candidate's
// four factors side by side (measured bench, planned hero MFU, EP cost
// measured and planned, the ladder's projection to the hero with its
// interval) plus inference cost, the ranking by the spec's rule, and the
// verdict sentences the data support. A pure function of the step records
// (arch_step.h), so rewriting it from a finished directory gives the same
// bytes.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "arch/arch_spec.h"

namespace mt {

// One candidate's step records, as arch_measure.h, arch_plan.h and arch_ladder.h write them.
struct CandidateRecords {
  nlohmann::json bench, ep, plan, fit, decode;
};

// The comparison; `records` in the spec's candidate order.
nlohmann::json compare_json(const ArchSpec& spec, const std::vector<CandidateRecords>& records);

// The loss a fit record's law gives at (N, D), with the bootstrap interval at `level`:
// {"value", "lo", "hi"} (null when the fit failed).
nlohmann::json project_loss(const nlohmann::json& fit, double N, double D, double level);

}  // namespace mt
