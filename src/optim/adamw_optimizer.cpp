// adamw_optimizer.cpp — per-tensor AdamW calls so each tensor gets its decay.
#include "optim/adamw_optimizer.h"

#include <algorithm>
#include <cmath>

#include "core/phase_timer.h"
#include "core/reduce.h"
#include "kernels/cpu/adamw.h"

namespace mt {
namespace {
constexpr int64_t kBlock = 1 << 16;
}  // namespace

AdamW::AdamW(const ParamLayout& layout, const AdamWConfig& cfg)
    : layout_(layout), cfg_(cfg), m_(layout.total(), 0.0f), v_(layout.total(), 0.0f) {}

double global_grad_norm(const float* grads, int64_t n) { return std::sqrt(sum_squares(grads, n)); }

double AdamW::step(float* params, const float* grads, double lr, int64_t step) {
  ScopedPhase phase(Phase::kOptimizer);
  const double norm = global_grad_norm(grads, layout_.total());
  float scale = 1.0f;
  if (cfg_.grad_clip > 0.0 && norm > cfg_.grad_clip) scale = float(cfg_.grad_clip / (norm + 1e-6));
  // One parallel region over fixed blocks of the flat buffer; each block is
  // cut at tensor boundaries so every tensor gets its own weight decay.
  const auto& entries = layout_.entries();
  const int64_t total = layout_.total(), blocks = (total + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t lo = b * kBlock, hi = std::min(total, lo + kBlock);
    // First entry ending after lo (entries are sorted by offset and contiguous).
    size_t e = std::upper_bound(entries.begin(), entries.end(), lo,
                                [](int64_t x, const ParamEntry& en) { return x < en.offset + en.numel; }) -
               entries.begin();
    for (int64_t i = lo; i < hi && e < entries.size(); ++e) {
      const ParamEntry& en = entries[e];
      const int64_t end = std::min(hi, en.offset + en.numel);
      const bool decay = en.kind == ParamKind::kMatrix || (en.kind == ParamKind::kEmbedding && cfg_.decay_embeddings);
      AdamWParams a{float(lr), float(cfg_.beta1), float(cfg_.beta2), float(cfg_.eps),
                    decay ? float(cfg_.weight_decay) : 0.0f, scale, step};
      adamw_update(params + i, m_.data() + i, v_.data() + i, grads + i, end - i, a);
      i = end;
    }
  }
  return norm;
}

}  // namespace mt
