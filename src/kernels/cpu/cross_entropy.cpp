// cross_entropy.cpp — row-parallel log-softmax with max subtraction, AVX-512.
#include "kernels/cpu/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/simd.h"

namespace mt {
namespace {
inline float row_logsumexp(const float* row, int64_t V) {
  __m512 vm = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t v = 0; v < V; v += 16) {
    const __mmask16 k = simd::tail_mask(V - v);
    vm = _mm512_mask_max_ps(vm, k, vm, _mm512_maskz_loadu_ps(k, row + v));
  }
  const float m = _mm512_reduce_max_ps(vm);
  const __m512 vmax = _mm512_set1_ps(m);
  __m512 s = _mm512_setzero_ps();
  for (int64_t v = 0; v < V; v += 16) {
    const __mmask16 k = simd::tail_mask(V - v);
    s = _mm512_mask_add_ps(s, k, s, simd::exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, row + v), vmax)));
  }
  return m + std::log(_mm512_reduce_add_ps(s));
}
}  // namespace

void cross_entropy_forward_backward(float* losses, float* logits, const int32_t* targets, int64_t R,
                                    int64_t V, float grad_scale) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < R; ++r) {
    float* row = logits + r * V;
    const int32_t t = targets[r];
    if (t < 0) {
      losses[r] = 0.0f;
      std::fill(row, row + V, 0.0f);
      continue;
    }
    const float lse = row_logsumexp(row, V);
    losses[r] = lse - row[t];
    const __m512 vlse = _mm512_set1_ps(lse), vscale = _mm512_set1_ps(grad_scale);
    for (int64_t v = 0; v < V; v += 16) {
      const __mmask16 k = simd::tail_mask(V - v);
      const __m512 p = simd::exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, row + v), vlse));
      _mm512_mask_storeu_ps(row + v, k, _mm512_mul_ps(p, vscale));
    }
    row[t] -= grad_scale;
  }
}

void cross_entropy_forward(float* losses, const float* logits, const int32_t* targets, int64_t R,
                           int64_t V) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < R; ++r) {
    const float* row = logits + r * V;
    losses[r] = targets[r] < 0 ? 0.0f : row_logsumexp(row, V) - row[targets[r]];
  }
}

}  // namespace mt
