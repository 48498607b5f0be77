// kv_cache.cpp — allocation of the per-layer K/V (or MLA latent) rings and D-layer states.
#include "model/kv_cache.h"

#include <algorithm>

#include "model/buffer_sizer.h"

namespace mt {

KvCache::KvCache(const ModelConfig& c, int64_t batch, int64_t max_len, KvDtype dtype)
    : B_(batch), max_len_(max_len), dtype_(dtype), len_(size_t(batch), 0), doc_start_(size_t(batch), 0) {
  const size_t L = size_t(c.n_layers);
  kf_.resize(L);
  vf_.resize(L);
  kb_.resize(L);
  vb_.resize(L);
  state_.resize(L);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    if (c.is_delta(l)) {
      cap_.push_back(0);
      state_[size_t(l)].assign(size_t(batch * c.delta_h() * c.delta_dv() * c.delta_dk()), 0.0f);
      continue;
    }
    const int64_t C = c.is_local(l) ? std::min(c.window, max_len) : max_len;
    cap_.push_back(C);
    // MLA: one latent row per slot, no separate values; GQA: K and V per kv head.
    const size_t n = c.mla() ? size_t(batch * C * (c.kv_lora_rank + c.qk_rope_head_dim))
                             : size_t(batch * c.kv_heads(l) * C * c.head_dim());
    const size_t nv = c.mla() ? 0 : n;
    if (dtype == KvDtype::kF32) {
      kf_[size_t(l)].assign(n, 0.0f);
      vf_[size_t(l)].assign(nv, 0.0f);
    } else {
      kb_[size_t(l)].assign(n, bf16{0});
      vb_[size_t(l)].assign(nv, bf16{0});
    }
  }
}

void KvCache::reset(int64_t b) {
  len_[size_t(b)] = 0;
  doc_start_[size_t(b)] = 0;
  for (std::vector<float>& s : state_) {
    const size_t per = s.size() / size_t(B_);
    std::fill(s.begin() + ptrdiff_t(size_t(b) * per), s.begin() + ptrdiff_t(size_t(b + 1) * per), 0.0f);
  }
}

int64_t kv_cache_elems(const ModelConfig& c, int64_t l) {
  if (c.is_delta(l)) return 0;
  return c.mla() ? c.kv_lora_rank + c.qk_rope_head_dim : 2 * c.kv_heads(l) * c.head_dim();
}

int64_t state_elems(const ModelConfig& c, int64_t l) {
  return c.is_delta(l) ? c.delta_h() * c.delta_dv() * c.delta_dk() : 0;
}

double KvCache::planned_bytes(const ModelConfig& c, int64_t batch, int64_t max_len, KvDtype dtype) {
  const double elem = dtype == KvDtype::kF32 ? 4.0 : 2.0, B = double(batch);
  double total = 0;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const double C = double(c.is_local(l) ? std::min(c.window, max_len) : max_len);  // slots, as the constructor
    total += elem * B * C * double(kv_cache_elems(c, l)) + 4.0 * B * double(state_elems(c, l));  // states are fp32
  }
  return total;
}

int64_t KvCache::bytes() const {
  return vector_bytes(kf_) + vector_bytes(vf_) + vector_bytes(kb_) + vector_bytes(vb_) + vector_bytes(state_);
}

}  // namespace mt
