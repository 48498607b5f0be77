// data_phase_plan.h — `moetrain data plan DATASET --config RUN` for a run in
// phases: every data segment's mixture against one pool of documents, and
// the tokens each phase takes from each bucket (docs/data.md, "Phase plans").
#pragma once
#include <string>

#include "cli/exit_code.h"
#include "train/run_config.h"

namespace mt {

// Prints the plan (text or JSON); exit 3 (refused) when a document would be
// read twice or a phase reads past its mixture's budget.
ExitCode run_phase_plan(const std::string& dataset_dir, const RunConfig& cfg, bool as_json);

}  // namespace mt
