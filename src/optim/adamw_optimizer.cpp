// adamw_optimizer.cpp — per-tensor AdamW calls so each tensor gets its decay.
#include "optim/adamw_optimizer.h"

#include <cmath>

#include "core/phase_timer.h"
#include "core/reduce.h"
#include "kernels/cpu/adamw.h"

namespace mt {

AdamW::AdamW(const ParamLayout& layout, const AdamWConfig& cfg)
    : layout_(layout), cfg_(cfg), m_(layout.total(), 0.0f), v_(layout.total(), 0.0f) {}

double global_grad_norm(const float* grads, int64_t n) { return std::sqrt(sum_squares(grads, n)); }

double AdamW::step(float* params, const float* grads, double lr, int64_t step) {
  ScopedPhase phase(Phase::kOptimizer);
  const double norm = global_grad_norm(grads, layout_.total());
  float scale = 1.0f;
  if (cfg_.grad_clip > 0.0 && norm > cfg_.grad_clip) scale = float(cfg_.grad_clip / (norm + 1e-6));
  for (const ParamEntry& e : layout_.entries()) {
    const bool decay = e.kind == ParamKind::kMatrix || (e.kind == ParamKind::kEmbedding && cfg_.decay_embeddings);
    AdamWParams a{float(lr), float(cfg_.beta1), float(cfg_.beta2), float(cfg_.eps),
                  decay ? float(cfg_.weight_decay) : 0.0f, scale, step};
    adamw_update(params + e.offset, m_.data() + e.offset, v_.data() + e.offset, grads + e.offset, e.numel, a);
  }
  return norm;
}

}  // namespace mt
