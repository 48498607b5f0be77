// attention_softmax.cpp — the masked row softmax shared by the attention kernels.
#include "kernels/cpu/attention_softmax.h"

#include <cmath>
#include <limits>

#include "kernels/cpu/simd.h"

namespace mt {

void attention_softmax_rows(float* S, int64_t rows, int64_t nk, int64_t i0, int64_t j0, int64_t window,
                            const int32_t* doc_start, float scale, const float* lse, float* lse_out) {
  using namespace simd;
  const Vec vscale = set1(scale);
  for (int64_t r = 0; r < rows; ++r) {
    float* row = S + r * nk;
    const int64_t i = i0 + r;
    const int64_t begin = doc_start ? attention_key_begin(i, window, doc_start[r]) : attention_key_begin(i, window);
    const int64_t lo = begin - j0, hi = i - j0 + 1;  // valid columns [lo, hi)
    float m;
    if (lse) {
      m = lse[r];
    } else {
      Vec vm = set1(-std::numeric_limits<float>::infinity());
      for (int64_t c = lo; c < hi; c += kLanes) {
        const Mask k = tail_mask(hi - c);
        vm = mask_max(vm, k, mul(load(k, row + c), vscale));
      }
      m = reduce_max(vm);
    }
    const Vec vmax = set1(m);
    Vec vsum = zero();
    for (int64_t c = lo; c < hi; c += kLanes) {
      const Mask k = tail_mask(hi - c);
      const Vec p = simd::exp(fmsub(load(k, row + c), vscale, vmax));
      store(row + c, k, p);
      vsum = mask_add(vsum, k, p);
    }
    std::fill(row, row + lo, 0.0f);
    std::fill(row + hi, row + nk, 0.0f);
    if (!lse) {
      const float l = reduce_add(vsum);
      const Vec inv = set1(1.0f / l);
      for (int64_t c = lo; c < hi; c += kLanes) {
        const Mask k = tail_mask(hi - c);
        store(row + c, k, mul(load(k, row + c), inv));
      }
      lse_out[r] = m + std::log(l);
    }
  }
}

}  // namespace mt
