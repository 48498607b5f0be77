// attention_cached.h — attention of new tokens against a KV cache, for
// incremental decoding (model/decoder.h). The same maths as attention.h:
// query at absolute position p attends to keys j with
// max(0, p - window + 1) <= j <= p (window <= 0: every j <= p), scale 1/sqrt(Dh)
// unless given, query head h reads kv head h / (H / Hkv).
// Rows are ragged: row r holds one new token of sequence seq[r] at position
// pos[r]; a sequence's new rows are consecutive with consecutive positions,
// and its cache holds every visible position below its first new one.
// Cache of one layer: k, v (Bmax, Hkv, C, Dh); position j lives in slot
// j % C (a ring when C < max length: sliding-window layers keep C = window).
// Shapes: q (N, H, Dh), o (N, H, Dv); k_new, v_new (N, Hkv, Dh). A value is
// the first Dv of a row of ld_v floats (Dv = ld_v = Dh: its own row), so the
// values may be a prefix of the keys: multi-head latent attention's absorbed
// form (model/mla_decode.h) caches one row [c_kv | k_r] per token and reads
// c_kv as the value (Hkv = 1, v = k, Dv = Dc, ld_v = Dc + Dr).
// Document masking (train.document_mask): doc_start[r], when given, is the
// position where row r's document begins; its query sees no key before it.
// Each (row, head) is one task that owns its output: thread-count invariant.
#pragma once
#include <cstdint>

#include "core/bf16.h"

namespace mt {

struct CachedAttentionDims {
  int64_t N;       // new rows
  int64_t H, Hkv, Dh;
  int64_t C;       // cache slots per (sequence, kv head)
  int64_t window;  // <= 0: global causal
  int64_t Dv = 0;     // value width; 0 = Dh
  int64_t ld_v = 0;   // floats per value row (new rows and cache slots); 0 = Dv
  float scale = 0.0f; // score scale; 0 = 1/sqrt(Dh)
};

// o (N, H, Dv) written. first_row[r] = the first new row of seq[r]'s run;
// doc_start (N) or null (see above).
template <typename T>
void attention_cached_forward(float* o, const float* q, const float* k_new, const float* v_new, const T* k_cache,
                              const T* v_cache, const int32_t* seq, const int64_t* pos, const int64_t* first_row,
                              const CachedAttentionDims& d, const int64_t* doc_start = nullptr);

// Writes the new rows' k and v into their slots pos % C (rows in order, so
// with more new rows than slots the newest positions stay). v_cache null:
// values are a prefix of the keys (see above), nothing more to write.
template <typename T>
void kv_cache_append(T* k_cache, T* v_cache, const float* k_new, const float* v_new, const int32_t* seq,
                     const int64_t* pos, const CachedAttentionDims& d);

}  // namespace mt
