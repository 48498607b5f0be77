// magnitude_prune.cpp — threshold by selection, then one pass.
#include "kernels/cpu/magnitude_prune.h"

#include <algorithm>
#include <cmath>

namespace mt {

int64_t prune_to_largest(float* w, int64_t n, int64_t keep, float* scratch) {
  if (keep >= n) {
    int64_t nz = 0;
    for (int64_t i = 0; i < n; ++i) nz += w[i] != 0.0f ? 1 : 0;
    return nz;
  }
  if (keep <= 0) {
    std::fill(w, w + n, 0.0f);
    return 0;
  }
  for (int64_t i = 0; i < n; ++i) scratch[i] = std::fabs(w[i]);
  // The keep-th largest magnitude: everything above it stays, then as many
  // equal to it as there is room for, first indices first.
  std::nth_element(scratch, scratch + (n - keep), scratch + n);
  const float t = scratch[n - keep];
  int64_t above = 0;
  for (int64_t i = 0; i < n; ++i) above += std::fabs(w[i]) > t ? 1 : 0;
  int64_t ties = keep - above, nz = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(w[i]);
    if (a > t || (a == t && ties-- > 0)) {
      nz += w[i] != 0.0f ? 1 : 0;
    } else {
      w[i] = 0.0f;
    }
  }
  return nz;
}

}  // namespace mt
