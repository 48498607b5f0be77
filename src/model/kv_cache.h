// kv_cache.h — the key/value cache of incremental decoding (model/decoder.h):
// per layer, K and V of every sequence of the batch, (B, Hkv, C, Dh), with
// C = max_len on global layers and min(window, max_len) on sliding-window
// layers (a ring: position j lives in slot j % C, so a local layer never
// holds more than the `window` keys a query can see). Grouped-query layers
// cache their Hkv heads only. Stored in bf16 (the planner's figure,
// plan/model_stats.h kv_bytes_per_sequence, counts bf16) or fp32 (exact
// against the training forward). Multi-head latent attention layers cache one
// row per token instead of K and V, [c_kv | k_r] (B, C, Dc + Dr): the
// normalised kv latent and the rotated shared RoPE key (DeepSeek-V2 section
// 2.1.4; decoded in the absorbed form, model/mla_decode.h), on the same rings.
// Gated-delta ("D") layers cache no keys: their
// recurrent state (B, Hd, Dv, Dk), fp32, the same size at every position.
// Legend: B sequences, Hkv kv heads, C slots, Dh head dim; Dc, Dr the MLA
// latent and RoPE key dims; Hd, Dk, Dv the D layers' heads and dims.
#pragma once
#include <cstdint>
#include <vector>

#include "core/bf16.h"
#include "model/config.h"

namespace mt {

enum class KvDtype { kF32, kBf16 };

// KV-cache elements one token keeps in layer `l`: 2 Hkv Dh for GQA; Dc + Dr
// for MLA, whose cache is the latent c_KV and the shared RoPE key
// (DeepSeek-V2 section 2.1.2, Table 1); 0 on gated-delta layers.
int64_t kv_cache_elems(const ModelConfig& c, int64_t l);
// Recurrent-state elements one sequence keeps in layer `l`: Hd Dv Dk on
// gated-delta ("D") layers, 0 on attention layers.
int64_t state_elems(const ModelConfig& c, int64_t l);

class KvCache {
 public:
  KvCache(const ModelConfig& c, int64_t batch, int64_t max_len, KvDtype dtype);

  // Slots per (sequence, kv head) of `layer`.
  int64_t capacity(int64_t layer) const { return cap_[size_t(layer)]; }
  int64_t batch() const { return B_; }
  int64_t max_len() const { return max_len_; }
  KvDtype dtype() const { return dtype_; }
  // Positions already cached for sequence b (the next token's position).
  int64_t length(int64_t b) const { return len_[size_t(b)]; }
  void advance(int64_t b, int64_t n) { len_[size_t(b)] += n; }
  // Where sequence b's next position's document begins (document masking,
  // decoder.h): 0 until a separator was cached, then the position after the last one.
  int64_t document_start(int64_t b) const { return doc_start_[size_t(b)]; }
  void set_document_start(int64_t b, int64_t p) { doc_start_[size_t(b)] = p; }
  // Forgets sequence b (its slots are overwritten as it grows again; its D-layer states are zeroed).
  void reset(int64_t b);

  // Layer storage (exactly one of the pairs is non-empty, per dtype; on MLA
  // layers only k, holding the latent rows: latent_*).
  float* k_f32(int64_t l) { return kf_[size_t(l)].data(); }
  float* v_f32(int64_t l) { return vf_[size_t(l)].data(); }
  bf16* k_bf16(int64_t l) { return kb_[size_t(l)].data(); }
  bf16* v_bf16(int64_t l) { return vb_[size_t(l)].data(); }
  float* latent_f32(int64_t l) { return k_f32(l); }
  bf16* latent_bf16(int64_t l) { return k_bf16(l); }
  // D layer l's states, (B, Hd, Dv, Dk); empty on attention layers.
  float* state(int64_t l) { return state_[size_t(l)].data(); }

  // Bytes of K, V (or MLA latents) and D-layer states held, measured from the buffers.
  int64_t bytes() const;
  // What a cache of this shape would hold, before allocating it (in double:
  // any shape a flag can ask for stays finite).
  static double planned_bytes(const ModelConfig& c, int64_t batch, int64_t max_len, KvDtype dtype);

 private:
  int64_t B_, max_len_;
  KvDtype dtype_;
  std::vector<int64_t> cap_, len_, doc_start_;
  std::vector<std::vector<float>> kf_, vf_;
  std::vector<std::vector<bf16>> kb_, vb_;
  std::vector<std::vector<float>> state_;
};

}  // namespace mt
