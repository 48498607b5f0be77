// sweep_report.h — report.html of a sweep directory (sweep_run.h): the
// loss of every run against its cost with the front, the GP's leave-one-out
// prediction of each run against what it measured, each hyperparameter's
// value on the front against cost with its fitted power law, the settings
// written for chosen costs, and every run in a table. Drawn from front.json
// and results.jsonl only, so `moetrain report DIR` writes it again.
#pragma once
#include <string>

#include "core/status.h"

namespace mt {

Status write_sweep_report(const std::string& dir, const std::string& path);

}  // namespace mt
