// flag_checks.cpp — see flag_checks.h.
#include "cli/flag_checks.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <string>

namespace mt {
namespace {

CLI::Validator bound(bool strict) {
  const char* what = strict ? "a number > 0" : "a number >= 0";
  return CLI::Validator(
      [strict, what](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0') return "";  // not a number: the conversion says so (exit 104)
        if (!std::isfinite(v) || (strict ? v <= 0 : v < 0)) return std::string("expected ") + what + ", got " + text;
        return "";
      },
      strict ? "POSITIVE" : "NONNEGATIVE", strict ? "POSITIVE" : "NONNEGATIVE");
}

}  // namespace

CLI::Validator in_range(double lo, double hi) {
  const std::string what = fmt::format("a number in [{:.15g}, {:.15g}]", lo, hi);
  return CLI::Validator(
      [lo, hi, what](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0') return "";  // not a number: the conversion says so (exit 104)
        if (!(v >= lo && v <= hi)) return "expected " + what + ", got " + text;
        return "";
      },
      fmt::format("in [{:.15g}, {:.15g}]", lo, hi), "IN_RANGE");
}

const CLI::Validator& non_negative() {
  static const CLI::Validator v = bound(false);
  return v;
}

const CLI::Validator& positive() {
  static const CLI::Validator v = bound(true);
  return v;
}

}  // namespace mt
