// adamw_optimizer.h — AdamW over the flat parameter buffer: moments mirror
// the ParamLayout; weight decay applies to matrices only (norms never; the
// embedding only when asked, and the tied head is the embedding).
// Global-norm clipping scales the whole gradient before the update.
// Sharded (FSDP): the optimizer holds moments only for the ranges of the
// layout this process owns, stored back to back; the caller sums
// local_sum_squares over ranks and passes the global norm to update().
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/param_layout.h"

namespace mt {

struct AdamWConfig {
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  double weight_decay = 0.1;      // decoupled; matrices only (never norms)
  bool decay_embeddings = false;  // also decay the embedding (and the tied head)
  double grad_clip = 1.0;         // global L2 norm; 0 = off
};

class ConfigSchema;
// Declares beta1, beta2, eps, weight_decay, decay_embeddings, grad_clip under `table`.
void declare_keys(ConfigSchema& s, AdamWConfig& c, const std::string& table);

class AdamW {
 public:
  // Owned elements: layout range [lo, hi) stored at local offset `local`.
  struct Range {
    int64_t lo = 0, hi = 0, local = 0;
  };
  AdamW(const ParamLayout& layout, const AdamWConfig& cfg);  // the whole layout
  AdamW(const ParamLayout& layout, const AdamWConfig& cfg, std::vector<Range> owned);

  // Clips (if enabled) and applies one update; returns the pre-clip global
  // gradient L2 norm. `step` is 1-based (bias correction). One process only
  // (the norm of the local gradient is the global one).
  double step(float* params, const float* grads, double lr, int64_t step);

  // Sum of squares of this process's gradient elements (thread-count invariant).
  double local_sum_squares(const float* grads) const;
  // The update with a given pre-clip global norm (params, grads, moments local).
  void update(float* params, const float* grads, double lr, int64_t step, double global_norm);
  int64_t local_size() const { return local_size_; }
  const std::vector<Range>& owned() const { return owned_; }

  std::vector<float>& m() { return m_; }
  std::vector<float>& v() { return v_; }

 private:
  const ParamLayout& layout_;
  AdamWConfig cfg_;
  std::vector<Range> owned_;  // sorted by lo (and by local)
  int64_t local_size_ = 0;
  std::vector<float> m_, v_;
};

// Global L2 norm of a flat gradient, thread-count invariant.
double global_grad_norm(const float* grads, int64_t n);

}  // namespace mt
