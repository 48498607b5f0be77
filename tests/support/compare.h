// compare.h — how kernel tests compare a result with its reference: the
// largest difference relative to the reference's largest magnitude, floored
// at 1 (inputs are of order 1, and outputs that vanish exactly are rounding
// noise in both), and the tolerance stated for bf16 operands.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

namespace mt::testing {

// max |a - b| / max(max |b|, 1).
inline double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double err = 0.0, scale = 1.0;
  for (size_t i = 0; i < a.size(); ++i) {
    err = std::max(err, std::abs(double(a[i]) - b[i]));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  return err / scale;
}

// bf16 operands (8 significant bits), fp32 accumulation: the bound the
// matmul-tiled attention and the grouped experts keep against fp32.
inline constexpr double kBf16Tol = 3e-2;

}  // namespace mt::testing
