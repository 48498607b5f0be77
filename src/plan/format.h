// format.h — number formatting shared by the plan's terminal table and HTML
// report: counts (1.03T, 32.6B, 2.05M), byte sizes (219 kB, 1.12 GB, GiB)
// and FLOP counts (2.93e+24).
#pragma once
#include <fmt/format.h>

#include <cmath>
#include <string>

namespace mt::plan::fmtx {

// Parameters, tokens, steps: k, M, B, T; scientific beyond.
inline std::string count(double v) {
  const double a = std::abs(v);
  if (a >= 1e15) return fmt::format("{:.3g}", v);
  if (a >= 1e12) return fmt::format("{:.3g}T", v / 1e12);
  if (a >= 1e9) return fmt::format("{:.3g}B", v / 1e9);
  if (a >= 1e6) return fmt::format("{:.3g}M", v / 1e6);
  if (a >= 1e3) return fmt::format("{:.3g}k", v / 1e3);
  return fmt::format("{:.3g}", v);
}

// Decimal byte sizes.
inline std::string bytes(double v) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  int i = 0;
  while (std::abs(v) >= 1000.0 && i < 5) v /= 1000.0, ++i;
  return fmt::format("{:.3g} {}", v, units[i]);
}

inline std::string gib(double b) { return fmt::format("{:.1f} GiB", b / (1024.0 * 1024.0 * 1024.0)); }

inline std::string flops(double v) { return fmt::format("{:.3g}", v); }

inline std::string pct(double v) { return fmt::format("{:.1f}%", 100 * v); }

// An MFU figure with its FLOP convention: the causal half of the attention square (model/flops.h), and the
// full-square figure beside it when the two differ by more than `gap` (relative); `ratio` = full / causal.
inline std::string mfu(double causal, double ratio, double gap = 0.05) {
  if (ratio - 1.0 > gap)
    return fmt::format("{:.1f}% causal half ({:.1f}% full square)", 100 * causal, 100 * causal * ratio);
  return fmt::format("{:.1f}% causal half", 100 * causal);
}

}  // namespace mt::plan::fmtx
