// adamw_optimizer.h — AdamW over the flat parameter buffer: moments mirror
// the ParamLayout; weight decay applies to matrices only (norms never; the
// embedding only when asked, and the tied head is the embedding).
// Global-norm clipping scales the whole gradient before the update.
#pragma once
#include <cstdint>
#include <vector>

#include "model/param_layout.h"

namespace mt {

struct AdamWConfig {
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  double weight_decay = 0.1;
  bool decay_embeddings = false;
  double grad_clip = 1.0;  // 0 = off
};

class AdamW {
 public:
  AdamW(const ParamLayout& layout, const AdamWConfig& cfg);

  // Clips (if enabled) and applies one update; returns the pre-clip global
  // gradient L2 norm. `step` is 1-based (bias correction).
  double step(float* params, const float* grads, double lr, int64_t step);

  std::vector<float>& m() { return m_; }
  std::vector<float>& v() { return v_; }

 private:
  const ParamLayout& layout_;
  AdamWConfig cfg_;
  std::vector<float> m_, v_;
};

// Global L2 norm of a flat gradient, thread-count invariant.
double global_grad_norm(const float* grads, int64_t n);

}  // namespace mt
