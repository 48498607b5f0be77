// fit_report.h — an Analysis as the JSON fit file (`--out`, `--json`; the
// format is specified in docs/ladder.md, and later tools read `law`) and as
// the text table `moetrain ladder fit` prints.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "ladder/analysis.h"

namespace mt::ladder {

constexpr int kFitFileVersion = 1;

nlohmann::json to_json(const Analysis& a);
std::string to_text(const Analysis& a, const std::string& source);

}  // namespace mt::ladder
