// adamw.cpp — elementwise and vectorised; bitwise identical however the
// range is split between threads.
#include "kernels/cpu/adamw.h"

#include <cmath>

#include "kernels/cpu/state_io.h"

namespace mt {
namespace {

template <typename S>
void adamw_update_impl(float* p, S* m, S* v, const float* g, int64_t n, const AdamWParams& a, const StateDither& d) {
  const float bc1 = 1.0f - float(std::pow(double(a.beta1), double(a.step)));
  const float bc2 = 1.0f - float(std::pow(double(a.beta2), double(a.step)));
  const float step_size = a.lr / bc1;
  const float inv_sqrt_bc2 = 1.0f / std::sqrt(bc2);
  const float decay = 1.0f - a.lr * a.weight_decay;
  // Scalars in registers: read through `a`, they could alias the arrays.
  const float beta1 = a.beta1, beta2 = a.beta2, eps = a.eps, grad_scale = a.grad_scale;
  const DitherRange dither(d.key, d.first);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i] * grad_scale;
    const uint32_t r = state_io::bits<S>(dither, i);
    const float mi = state_io::store(m, i, beta1 * state_io::load(m, i) + (1.0f - beta1) * gi, r);
    const float vi = state_io::store(v, i, beta2 * state_io::load(v, i) + (1.0f - beta2) * gi * gi, r >> 16);
    const float denom = std::sqrt(vi) * inv_sqrt_bc2 + eps;
    p[i] = p[i] * decay - step_size * mi / denom;
  }
}

}  // namespace

void adamw_update(float* p, float* m, float* v, const float* g, int64_t n, const AdamWParams& a, const StateDither&) {
  adamw_update_impl(p, m, v, g, n, a, StateDither{});
}

void adamw_update(float* p, bf16* m, bf16* v, const float* g, int64_t n, const AdamWParams& a, const StateDither& d) {
  adamw_update_impl(p, m, v, g, n, a, d);
}

}  // namespace mt
