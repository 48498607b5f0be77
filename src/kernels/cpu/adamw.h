// adamw.h — AdamW update over a contiguous range (decoupled weight decay,
// bias-corrected moments). g is multiplied by grad_scale first (clipping).
#pragma once
#include <cstdint>

namespace mt {

struct AdamWParams {
  float lr, beta1, beta2, eps;
  float weight_decay;  // applied as p -= lr * wd * p (0 for norms/embeddings)
  float grad_scale;
  int64_t step;        // 1-based, for bias correction
};

// Serial over [0, n): callers parallelise over blocks (one parallel region
// for the whole model instead of one per tensor).
void adamw_update(float* p, float* m, float* v, const float* g, int64_t n, const AdamWParams& a);

}  // namespace mt
