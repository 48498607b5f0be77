// cross_entropy.cpp — row-parallel log-softmax with max subtraction, vectorised (simd.h).
#include "kernels/cpu/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/simd.h"

namespace mt {

float row_logsumexp(const float* row, int64_t V) {
  using namespace simd;
  Vec vm = set1(-std::numeric_limits<float>::infinity());
  for (int64_t v = 0; v < V; v += kLanes) {
    const Mask k = tail_mask(V - v);
    vm = mask_max(vm, k, load(k, row + v));
  }
  const float m = reduce_max(vm);
  const Vec vmax = set1(m);
  Vec s = zero();
  for (int64_t v = 0; v < V; v += kLanes) {
    const Mask k = tail_mask(V - v);
    s = mask_add(s, k, simd::exp(sub(load(k, row + v), vmax)));
  }
  return m + std::log(reduce_add(s));
}

namespace {
// Row r: its loss, and the row overwritten with its gradient.
inline void loss_and_gradient_row(float* losses, float* row, int32_t t, int64_t r, int64_t V, float grad_scale) {
  if (t < 0) {
    losses[r] = 0.0f;
    std::fill(row, row + V, 0.0f);
    return;
  }
  const float lse = row_logsumexp(row, V);
  losses[r] = lse - row[t];
  const simd::Vec vlse = simd::set1(lse), vscale = simd::set1(grad_scale);
  for (int64_t v = 0; v < V; v += simd::kLanes) {
    const simd::Mask k = simd::tail_mask(V - v);
    const simd::Vec p = simd::exp(simd::sub(simd::load(k, row + v), vlse));
    simd::store(row + v, k, simd::mul(p, vscale));
  }
  row[t] -= grad_scale;
}
}  // namespace

void cross_entropy_forward_backward(float* losses, float* logits, const int32_t* targets, int64_t R,
                                    int64_t V, float grad_scale) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < R; ++r) loss_and_gradient_row(losses, logits + r * V, targets[r], r, V, grad_scale);
}

void cross_entropy_forward_backward(float* losses, float* logits, void* dlogits, OperandForm f, const int32_t* targets,
                                    int64_t R, int64_t V, float grad_scale) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < R; ++r) {
    loss_and_gradient_row(losses, logits + r * V, targets[r], r, V, grad_scale);
    write_operand(dlogits, r * V, logits + r * V, V, f);
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
