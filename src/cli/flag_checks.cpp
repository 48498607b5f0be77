// flag_checks.cpp — see flag_checks.h.
#include "cli/flag_checks.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>

namespace mt {
namespace {

// A number for which `ok` holds; `what` says which ("a number >= 0"). Text
// that is not a number passes: the conversion refuses it (exit 104).
CLI::Validator number_check(std::function<bool(double)> ok, const std::string& what, const std::string& desc) {
  return CLI::Validator(
      [ok, what](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0') return "";
        return ok(v) ? "" : "expected " + what + ", got " + text;
      },
      desc, desc);
}

}  // namespace

CLI::Validator in_range(double lo, double hi) {
  return number_check([lo, hi](double v) { return v >= lo && v <= hi; },  // NaN fails both
                      fmt::format("a number in [{:.15g}, {:.15g}]", lo, hi),
                      fmt::format("in [{:.15g}, {:.15g}]", lo, hi));
}

const CLI::Validator& non_negative() {
  static const CLI::Validator v =
      number_check([](double x) { return std::isfinite(x) && x >= 0; }, "a number >= 0", "NONNEGATIVE");
  return v;
}

const CLI::Validator& positive() {
  static const CLI::Validator v =
      number_check([](double x) { return std::isfinite(x) && x > 0; }, "a number > 0", "POSITIVE");
  return v;
}

}  // namespace mt
