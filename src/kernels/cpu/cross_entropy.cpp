// cross_entropy.cpp — row-parallel log-softmax with max subtraction.
#include "kernels/cpu/cross_entropy.h"

#include <algorithm>
#include <cmath>

namespace mt {
namespace {
inline float row_logsumexp(const float* row, int64_t V, float* max_out) {
  float m = row[0];
  for (int64_t v = 1; v < V; ++v) m = std::max(m, row[v]);
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (int64_t v = 0; v < V; ++v) s += std::exp(row[v] - m);
  *max_out = m;
  return m + std::log(s);
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
    float m;
    const float lse = row_logsumexp(row, V, &m);
    losses[r] = lse - row[t];
#pragma omp simd
    for (int64_t v = 0; v < V; ++v) row[v] = std::exp(row[v] - lse) * grad_scale;
    row[t] -= grad_scale;
  }
}

void cross_entropy_forward(float* losses, const float* logits, const int32_t* targets, int64_t R,
                           int64_t V) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < R; ++r) {
    const float* row = logits + r * V;
    float m;
    losses[r] = targets[r] < 0 ? 0.0f : row_logsumexp(row, V, &m) - row[targets[r]];
  }
}

}  // namespace mt
