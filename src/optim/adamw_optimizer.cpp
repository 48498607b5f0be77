// adamw_optimizer.cpp — per-tensor AdamW calls so each tensor gets its decay.
#include "optim/adamw_optimizer.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/config_schema.h"
#include "core/phase_timer.h"
#include "core/reduce.h"
#include "kernels/cpu/adamw.h"

namespace mt {
namespace {
constexpr int64_t kBlock = 1 << 16;
}  // namespace

AdamW::AdamW(const ParamLayout& layout, const AdamWConfig& cfg)
    : AdamW(layout, cfg, {Range{0, layout.total(), 0}}) {}

AdamW::AdamW(const ParamLayout& layout, const AdamWConfig& cfg, std::vector<Range> owned)
    : layout_(layout), cfg_(cfg), owned_(std::move(owned)) {
  for (const Range& r : owned_) {
    MT_CHECK(r.local == local_size_ && r.hi >= r.lo, "owned ranges must be stored back to back");
    local_size_ += r.hi - r.lo;
  }
  m_.assign(local_size_, 0.0f);
  v_.assign(local_size_, 0.0f);
}

double global_grad_norm(const float* grads, int64_t n) { return std::sqrt(sum_squares(grads, n)); }

double AdamW::local_sum_squares(const float* grads) const {
  ScopedPhase phase(Phase::kOptimizer);
  return sum_squares(grads, local_size_);
}

double AdamW::step(float* params, const float* grads, double lr, int64_t step) {
  const double norm = std::sqrt(local_sum_squares(grads));
  update(params, grads, lr, step, norm);
  return norm;
}

void AdamW::update(float* params, const float* grads, double lr, int64_t step, double norm) {
  ScopedPhase phase(Phase::kOptimizer);
  float scale = 1.0f;
  if (cfg_.grad_clip > 0.0 && norm > cfg_.grad_clip) scale = float(cfg_.grad_clip / (norm + 1e-6));
  // One parallel region over fixed blocks of the local buffer; each block is
  // cut at owned-range and tensor boundaries so every tensor gets its own
  // weight decay.
  const auto& entries = layout_.entries();
  const int64_t total = local_size_, blocks = (total + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t lo = b * kBlock, hi = std::min(total, lo + kBlock);
    // First owned range ending after lo.
    size_t r = std::upper_bound(owned_.begin(), owned_.end(), lo,
                                [](int64_t x, const Range& rg) { return x < rg.local + (rg.hi - rg.lo); }) -
               owned_.begin();
    for (int64_t i = lo; i < hi && r < owned_.size();) {
      const Range& rg = owned_[r];
      const int64_t range_end = rg.local + (rg.hi - rg.lo);
      if (i >= range_end) {
        ++r;
        continue;
      }
      const int64_t g = rg.lo + (i - rg.local);  // layout offset of local element i
      // The entry holding g (entries are sorted by offset and contiguous).
      const ParamEntry& en = *std::upper_bound(entries.begin(), entries.end(), g,
                                               [](int64_t x, const ParamEntry& e) { return x < e.offset + e.numel; });
      const int64_t end = std::min({hi, range_end, i + (en.offset + en.numel - g)});
      const bool decay = en.kind == ParamKind::kMatrix || (en.kind == ParamKind::kEmbedding && cfg_.decay_embeddings);
      AdamWParams a{float(lr), float(cfg_.beta1), float(cfg_.beta2), float(cfg_.eps),
                    decay ? float(cfg_.weight_decay) : 0.0f, scale, step};
      adamw_update(params + i, m_.data() + i, v_.data() + i, grads + i, end - i, a);
      i = end;
    }
  }
}

void declare_keys(ConfigSchema& s, AdamWConfig& c, const std::string& t) {
  s.add(t + ".beta1", &c.beta1, "AdamW first-moment decay").min(0).below(1);
  s.add(t + ".beta2", &c.beta2, "AdamW second-moment decay").min(0).below(1);
  s.add(t + ".eps", &c.eps, "AdamW denominator epsilon").above(0);
  s.add(t + ".weight_decay", &c.weight_decay, "decoupled weight decay of matrices (never norms)").min(0);
  s.add(t + ".decay_embeddings", &c.decay_embeddings, "also decay the embedding (and the tied head)");
  s.add(t + ".grad_clip", &c.grad_clip, "clip the global gradient L2 norm to this").min(0).note("0 = off");
}

}  // namespace mt
