// flag_checks.h — the bounds numeric flags are checked against, with
// messages that say the bound in words ("expected a number >= 0, got -1"):
// CLI11's NonNegativeNumber and PositiveNumber print the range's far end,
// a 309-digit double.
#pragma once
#include <CLI/CLI.hpp>

namespace mt {

// A number >= 0 (and finite).
const CLI::Validator& non_negative();
// A number > 0 (and finite).
const CLI::Validator& positive();
// A number in [lo, hi] (not NaN): for counts whose absurd values would run
// for ever or allocate without bound.
CLI::Validator in_range(double lo, double hi);

}  // namespace mt
