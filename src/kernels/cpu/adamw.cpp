// adamw.cpp — elementwise and vectorised; bitwise identical however the
// range is split between threads.
#include "kernels/cpu/adamw.h"

#include <cmath>

namespace mt {

void adamw_update(float* p, float* m, float* v, const float* g, int64_t n, const AdamWParams& a) {
  const float bc1 = 1.0f - float(std::pow(double(a.beta1), double(a.step)));
  const float bc2 = 1.0f - float(std::pow(double(a.beta2), double(a.step)));
  const float step_size = a.lr / bc1;
  const float inv_sqrt_bc2 = 1.0f / std::sqrt(bc2);
  const float decay = 1.0f - a.lr * a.weight_decay;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i] * a.grad_scale;
    m[i] = a.beta1 * m[i] + (1.0f - a.beta1) * gi;
    v[i] = a.beta2 * v[i] + (1.0f - a.beta2) * gi * gi;
    const float denom = std::sqrt(v[i]) * inv_sqrt_bc2 + a.eps;
    p[i] = p[i] * decay - step_size * m[i] / denom;
  }
}

}  // namespace mt
