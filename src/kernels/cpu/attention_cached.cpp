// attention_cached.cpp — one (row, head) per task: scores against the visible
// keys (cache slots for positions before the sequence's new rows, the new
// rows themselves after), a max-subtracted softmax, then P V. The cache may
// hold bf16 (read back to fp32) or fp32.
#include "kernels/cpu/attention_cached.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace mt {
namespace {

inline float to_f32(float x) { return x; }
inline float to_f32(bf16 x) { return bf16_to_f32(x); }
inline void from_f32(float& out, float x) { out = x; }
inline void from_f32(bf16& out, float x) { out = f32_to_bf16(x); }

thread_local std::vector<float> tls_scores;

// One query against one key. In IEEE order the sum is a chain of dependent
// multiply-adds that never vectorises: at a long prompt's prefill it was the
// decoder's whole cost (docs/kernels.md). The simd reduction sums in
// lanes, in an order fixed by the build, not by the thread count.
template <typename T>
inline float dot(const float* q, const T* k, int64_t n) {
  float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
  for (int64_t e = 0; e < n; ++e) acc += q[e] * to_f32(k[e]);
  return acc;
}

}  // namespace

template <typename T>
void attention_cached_forward(float* o, const float* q, const float* k_new, const float* v_new, const T* k_cache,
                              const T* v_cache, const int32_t* seq, const int64_t* pos, const int64_t* first_row,
                              const CachedAttentionDims& d, const int64_t* doc_start) {
  const int64_t Dh = d.Dh, group = d.H / d.Hkv, Dv = d.Dv > 0 ? d.Dv : Dh, ldv = d.ld_v > 0 ? d.ld_v : Dv;
  const float scale = d.scale > 0.0f ? d.scale : 1.0f / std::sqrt(float(Dh));
#pragma omp parallel for schedule(dynamic, 4)
  for (int64_t rh = 0; rh < d.N * d.H; ++rh) {
    const int64_t r = rh / d.H, h = rh % d.H, kvh = h / group;
    const int64_t p = pos[r], r0 = first_row[r], p0 = pos[r0];
    const int64_t lo =
        std::max(d.window > 0 ? std::max<int64_t>(0, p - d.window + 1) : 0, doc_start ? doc_start[r] : 0);
    std::vector<float>& s = tls_scores;
    if (int64_t(s.size()) < p - lo + 1) s.resize(size_t(p - lo + 1));
    const float* qr = q + (r * d.H + h) * Dh;
    const int64_t cache_base = (int64_t(seq[r]) * d.Hkv + kvh) * d.C;
    // Keys before the run's new rows are cache slots (a ring: slot j mod C,
    // stepped rather than divided per key), the rest the new rows.
    const int64_t cached_end = std::min(p0, p + 1), new_begin = std::max(lo, p0);
    float m = -INFINITY;
    for (int64_t j = lo, slot = lo % d.C; j < cached_end; ++j, slot = slot + 1 == d.C ? 0 : slot + 1)
      s[j - lo] = dot(qr, k_cache + (cache_base + slot) * Dh, Dh) * scale;
    for (int64_t j = new_begin; j <= p; ++j)
      s[j - lo] = dot(qr, k_new + ((r0 + j - p0) * d.Hkv + kvh) * Dh, Dh) * scale;
    for (int64_t j = lo; j <= p; ++j) m = std::max(m, s[j - lo]);
    float sum = 0.0f;
    for (int64_t j = lo; j <= p; ++j) {
      s[j - lo] = std::exp(s[j - lo] - m);
      sum += s[j - lo];
    }
    const float inv = 1.0f / sum;
    float* orow = o + (r * d.H + h) * Dv;
    std::fill(orow, orow + Dv, 0.0f);
    for (int64_t j = lo, slot = lo % d.C; j < cached_end; ++j, slot = slot + 1 == d.C ? 0 : slot + 1) {
      const float w = s[j - lo] * inv;
      const T* vr = v_cache + (cache_base + slot) * ldv;
      for (int64_t e = 0; e < Dv; ++e) orow[e] += w * to_f32(vr[e]);
    }
    for (int64_t j = new_begin; j <= p; ++j) {
      const float w = s[j - lo] * inv;
      const float* vr = v_new + ((r0 + j - p0) * d.Hkv + kvh) * ldv;
      for (int64_t e = 0; e < Dv; ++e) orow[e] += w * vr[e];
    }
  }
}

template <typename T>
void kv_cache_append(T* k_cache, T* v_cache, const float* k_new, const float* v_new, const int32_t* seq,
                     const int64_t* pos, const CachedAttentionDims& d) {
  const int64_t Dh = d.Dh;
#pragma omp parallel for schedule(static)
  for (int64_t kvh = 0; kvh < d.Hkv; ++kvh)
    for (int64_t r = 0; r < d.N; ++r) {
      const int64_t slot = (int64_t(seq[r]) * d.Hkv + kvh) * d.C + pos[r] % d.C;
      const float* kr = k_new + (r * d.Hkv + kvh) * Dh;
      const float* vr = v_cache ? v_new + (r * d.Hkv + kvh) * Dh : nullptr;
      for (int64_t e = 0; e < Dh; ++e) from_f32(k_cache[slot * Dh + e], kr[e]);
      if (v_cache)
        for (int64_t e = 0; e < Dh; ++e) from_f32(v_cache[slot * Dh + e], vr[e]);
    }
}

template void attention_cached_forward<float>(float*, const float*, const float*, const float*, const float*,
                                              const float*, const int32_t*, const int64_t*, const int64_t*,
                                              const CachedAttentionDims&, const int64_t*);
template void attention_cached_forward<bf16>(float*, const float*, const float*, const float*, const bf16*, const bf16*,
                                             const int32_t*, const int64_t*, const int64_t*, const CachedAttentionDims&,
                                             const int64_t*);
template void kv_cache_append<float>(float*, float*, const float*, const float*, const int32_t*, const int64_t*,
                                     const CachedAttentionDims&);
template void kv_cache_append<bf16>(bf16*, bf16*, const float*, const float*, const int32_t*, const int64_t*,
                                    const CachedAttentionDims&);

}  // namespace mt
