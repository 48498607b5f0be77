// decoder.h — inference forward with a KV cache: prefill and incremental
// decoding of a batch of sequences, each at its own position. The same
// weights layout (weights.h), kernels and FFN block (moe_block.h) as the
// training forward; attention reads the cache (kernels/cpu/attention_cached.h),
// multi-head latent attention in its absorbed form over the compressed cache
// (model/mla_decode.h).
// Its logits equal Transformer::forward_logits over the same text at every
// position, within fp32 rounding (tests/unit/model_decoder_test.cpp).
//
// MoE at inference is dropless: every token reaches its top-k experts. The
// router, its scores, the aux-loss-free bias and the gate normalisation are
// the training ones; only capacity is off, because a token's expert output
// must not depend on which other tokens share its batch or its decoding step.
// A model trained with capacity_factor > 0 therefore decodes exactly as the
// training forward with capacity_factor = 0 (identical wherever training
// dropped nothing); `moetrain eval`'s held-out loss keeps the training
// forward, drops included, so it stays comparable to the run's eval_loss.
// Legend: N new rows (tokens) in a call, D model dim, V vocab, H heads,
// Hkv kv heads, Dh head dim.
#pragma once
#include <cstdint>
#include <vector>

#include "model/attention_block.h"
#include "model/config.h"
#include "model/kv_cache.h"
#include "model/mla_decode.h"
#include "model/moe_block.h"
#include "model/weights.h"

namespace mt {

struct DecoderOptions {
  int64_t batch = 1;           // sequences decoded together (cache rows)
  int64_t max_len = 256;       // positions per sequence (prompt + generated)
  int64_t max_rows = 256;      // new tokens per forward call (prefill chunk)
  KvDtype kv_dtype = KvDtype::kF32;
  // Document masking, as the model was trained (train.document_mask): the
  // token after each separator (the data's end-of-document id) starts a
  // document that attends to nothing before it and starts the gated-delta
  // layers from a zero state (Transformer::set_document_separator). -1: a
  // sequence is one document. One exception: a separator at a sequence's
  // first position is the prompt's BOS (every prompt of eval, generate and
  // RL begins with it), which the first document sees, as transformers and
  // lm-eval see the HF export's bos_token; the training forward of a row
  // that begins with a separator hides it from the next document, the one
  // place the two differ.
  int32_t document_separator = -1;
};

class Decoder {
 public:
  // params: the flat parameter buffer of `c` (weights.h); router_bias: per
  // MoE layer E floats (aux-loss-free balancing) or null. Both must outlive
  // the decoder.
  Decoder(const ModelConfig& c, const float* params, const float* router_bias, const DecoderOptions& opt);

  // Appends n tokens: row r is token tokens[r] of sequence seqs[r]; a
  // sequence's rows are consecutive and follow its cached positions. Writes
  // logits (n, V) of the next token after each row (logits()). n <= max_rows
  // and every position < max_len (checked: callers validate user input first).
  void forward(const int32_t* tokens, const int32_t* seqs, int64_t n);
  const float* logits() const { return logits_.data(); }

  KvCache& cache() { return cache_; }
  const ModelConfig& config() const { return c_; }
  const DecoderOptions& options() const { return opt_; }

 private:
  void attention(float* x_mid, const float* x, int64_t layer, int64_t n);
  // A gated-delta layer: the recurrence one row at a time on its sequence's cached state.
  void delta(float* x_mid, const float* x, int64_t layer, int64_t n);
  // The rows' document starts for the attention kernels, null without document masking.
  const int64_t* doc_rows() const { return opt_.document_separator >= 0 ? doc_start_.data() : nullptr; }
  // Row r is the first token of a document after the sequence's first (its gated-delta state restarts).
  bool starts_document(int64_t r) const {
    return opt_.document_separator >= 0 && pos_[size_t(r)] > 0 && doc_start_[size_t(r)] == pos_[size_t(r)];
  }

  ModelConfig c_;               // the model's config with capacity off (dropless)
  const float* params_;
  const float* router_bias_;
  DecoderOptions opt_;
  ParamLayout layout_;
  ModelOffsets off_;
  KvCache cache_;
  std::vector<float> rope_cos_, rope_sin_;          // (max_len, Dh/2); MLA: Dr/2
  std::vector<int64_t> pos_, first_row_, doc_start_;  // (max_rows)
  const int32_t* seqs_ = nullptr;                   // of the current forward call
  std::vector<float> x_, x_mid_, a_, rstd_, qkv_;   // (rows, D) ... (rows, QKV)
  std::vector<float> q_, k_, v_, q_raw_, k_raw_, rstd_q_, rstd_k_, o_;
  // Gated-delta layers: projection (rows, P); q, k, v, o, gates, norms and a scratch per row.
  std::vector<float> proj_, lin_q_, lin_k_, lin_v_, lin_g_, lin_beta_, lin_rn_, lin_o_, lin_tmp_;
  MlaDecodeActs mla_;                               // MLA layers' scratch (attention = "mla")
  std::vector<float> logits_;                       // (max_rows, V)
  FfnActs ffn_dense_, ffn_moe_;
  IdentityDispatcher experts_;
};

}  // namespace mt
