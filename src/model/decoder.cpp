// decoder.cpp — the layer loop of incremental decoding. Attention mirrors
// attention_block_forward with per-row positions and the cache; the FFN is
// ffn_block_forward itself, with the new rows as a batch of one-token
// sequences (dropless, so the grouping does not change any output).
#include "model/decoder.h"

#include <algorithm>

#include "core/check.h"
#include "kernels/cpu/attention_cached.h"
#include "kernels/cpu/delta_gates.h"
#include "kernels/cpu/gated_delta.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/heads.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"
#include "model/delta_block.h"

namespace mt {
namespace {
ModelConfig dropless(ModelConfig c) {
  c.capacity_factor = 0.0;
  c.routing_group = 0;
  return c;
}
}  // namespace

Decoder::Decoder(const ModelConfig& c, const float* params, const float* router_bias, const DecoderOptions& opt)
    : c_(dropless(c)),
      params_(params),
      router_bias_(router_bias),
      opt_(opt),
      cache_(c_, opt.batch, opt.max_len, opt.kv_dtype),
      experts_(c.n_experts) {
  off_ = build_layout(c_, layout_);
  const int64_t R = opt.max_rows, D = c_.d_model, Dh = c_.head_dim(), H = c_.n_heads;
  int64_t Hkv = 0;
  for (int64_t l = 0; l < c_.n_layers; ++l) Hkv = std::max(Hkv, c_.kv_heads(l));
  const int64_t Dr = c_.rope_dim();
  rope_cos_.resize(size_t(opt.max_len * Dr / 2));
  rope_sin_.resize(size_t(opt.max_len * Dr / 2));
  rope_tables(rope_cos_.data(), rope_sin_.data(), opt.max_len, Dr, c_.rope_params());
  pos_.resize(size_t(R));
  first_row_.resize(size_t(R));
  doc_start_.resize(size_t(R));
  for (auto* v : {&x_, &x_mid_, &a_}) v->resize(size_t(R * D));
  rstd_.resize(size_t(R));
  if (c_.mla()) {
    mla_.allocate(c_, R);
  } else {
    qkv_.resize(size_t(R * (H + 2 * Hkv) * Dh));
    for (auto* v : {&q_, &q_raw_, &o_}) v->resize(size_t(R * H * Dh));
    for (auto* v : {&k_, &v_, &k_raw_}) v->resize(size_t(R * Hkv * Dh));
    rstd_q_.resize(size_t(R * H));
    rstd_k_.resize(size_t(R * Hkv));
  }
  logits_.resize(size_t(R * c_.vocab_size));
  if (c_.has_delta()) {
    const int64_t Hd = c_.delta_h(), Dk = c_.delta_dk(), Dv = c_.delta_dv();
    proj_.resize(size_t(R * delta_proj_width(c_)));
    for (auto* v : {&lin_q_, &lin_k_}) v->resize(size_t(R * Hd * Dk));
    for (auto* v : {&lin_v_, &lin_o_}) v->resize(size_t(R * Hd * Dv));
    lin_tmp_.resize(size_t(R * Hd * std::max(Dk, Dv)));
    for (auto* v : {&lin_g_, &lin_beta_, &lin_rn_}) v->resize(size_t(R * Hd));
  }
  BufferSizer alloc(BufferSizer::Mode::kAllocate);
  for (int64_t l = 0; l < c_.n_layers; ++l) {
    FfnActs& f = c_.is_moe(l) ? ffn_moe_ : ffn_dense_;
    if (f.m.empty()) f.allocate(c_, l, R, 1, alloc);
  }
}

void Decoder::attention(float* x_mid, const float* x, int64_t layer, int64_t n) {
  if (c_.mla()) {
    const DecodeRows rows{n, seqs_, pos_.data(), first_row_.data(), rope_cos_.data(), rope_sin_.data(), doc_rows()};
    mla_decode_forward(x_mid, mla_, cache_, x, params_, off_.layers[size_t(layer)].attn, layer, c_, rows);
    return;
  }
  const int64_t D = c_.d_model, H = c_.n_heads, Hkv = c_.kv_heads(layer), Dh = c_.head_dim();
  const int64_t QKV = (H + 2 * Hkv) * Dh;
  const AttnOffsets& w = off_.layers[size_t(layer)].attn;
  const float* p = params_;
  const float eps = float(c_.norm_eps);
  rmsnorm_forward(a_.data(), rstd_.data(), x, p + w.norm, n, D, eps);
  linear_forward(qkv_.data(), a_.data(), p + w.wqkv, n, QKV, D, MatmulPrecision::kFp32);
  // (n, 1) "sequences" of one token: split_qkv gives q (n, H, Dh), k, v (n, Hkv, Dh).
  if (c_.qk_norm) {
    split_qkv(q_raw_.data(), k_raw_.data(), v_.data(), qkv_.data(), n, 1, H, Hkv, Dh);
    rmsnorm_forward(q_.data(), rstd_q_.data(), q_raw_.data(), p + w.q_norm, n * H, Dh, eps);
    rmsnorm_forward(k_.data(), rstd_k_.data(), k_raw_.data(), p + w.k_norm, n * Hkv, Dh, eps);
  } else {
    split_qkv(q_.data(), k_.data(), v_.data(), qkv_.data(), n, 1, H, Hkv, Dh);
  }
  rope_forward_at(q_.data(), q_.data(), rope_cos_.data(), rope_sin_.data(), pos_.data(), n, H, Dh);
  rope_forward_at(k_.data(), k_.data(), rope_cos_.data(), rope_sin_.data(), pos_.data(), n, Hkv, Dh);
  const CachedAttentionDims d{n, H, Hkv, Dh, cache_.capacity(layer), c_.is_local(layer) ? c_.window : 0};
  if (cache_.dtype() == KvDtype::kF32) {
    attention_cached_forward(o_.data(), q_.data(), k_.data(), v_.data(), cache_.k_f32(layer), cache_.v_f32(layer),
                             seqs_, pos_.data(), first_row_.data(), d, doc_rows());
    kv_cache_append(cache_.k_f32(layer), cache_.v_f32(layer), k_.data(), v_.data(), seqs_, pos_.data(), d);
  } else {
    attention_cached_forward(o_.data(), q_.data(), k_.data(), v_.data(), cache_.k_bf16(layer), cache_.v_bf16(layer),
                             seqs_, pos_.data(), first_row_.data(), d, doc_rows());
    kv_cache_append(cache_.k_bf16(layer), cache_.v_bf16(layer), k_.data(), v_.data(), seqs_, pos_.data(), d);
  }
  std::copy(x, x + n * D, x_mid);
  gemm(x_mid, o_.data(), p + w.wo, GemmShape{n, D, H * Dh, Trans::kNo, Trans::kYes}, 1.0f, MatmulPrecision::kFp32);
}

// Mirrors delta_block_forward with every row a one-token sequence: q, k, v, the gates and the
// output come out token-major (n, Hd, ...), and the state update runs row by row, in order, on
// the state of the row's sequence.
void Decoder::delta(float* x_mid, const float* x, int64_t layer, int64_t n) {
  const int64_t D = c_.d_model, Hd = c_.delta_h(), Dk = c_.delta_dk(), Dv = c_.delta_dv(), P = delta_proj_width(c_);
  const int64_t cv = 2 * Hd * Dk, cz = cv + Hd * Dv, ca = cz + Hd * Dv, cb = ca + Hd;
  const DeltaOffsets& w = off_.layers[size_t(layer)].delta_w;
  const float* p = params_;
  const float eps = float(c_.norm_eps);
  rmsnorm_forward(a_.data(), rstd_.data(), x, p + w.norm, n, D, eps);
  linear_forward(proj_.data(), a_.data(), p + w.w_in, n, P, D, MatmulPrecision::kFp32);
  l2norm_heads_forward(lin_q_.data(), lin_rn_.data(), proj_.data(), P, n, 1, Hd, Dk, delta_l2_eps());
  l2norm_heads_forward(lin_k_.data(), lin_rn_.data(), proj_.data() + Hd * Dk, P, n, 1, Hd, Dk, delta_l2_eps());
  gather_heads(lin_v_.data(), proj_.data() + cv, P, n, 1, Hd, Dv);
  delta_gates_forward(lin_g_.data(), lin_beta_.data(), proj_.data() + ca, proj_.data() + cb, P, p + w.A_log,
                      p + w.dt_bias, n, 1, Hd);
  const int64_t SS = Dv * Dk;
  for (int64_t r = 0; r < n; ++r) {
    // One row: (B, H, T) = (1, Hd, 1), so the kernel's head-major layout is the row's (Hd, ...).
    const GatedDeltaDims d{1, Hd, 1, Dk, Dv, 1};
    float* state = cache_.state(layer) + int64_t(seqs_[r]) * Hd * SS;
    if (starts_document(r)) std::fill(state, state + Hd * SS, 0.0f);  // as the chunked kernel's reset
    gated_delta_recurrent(lin_o_.data() + r * Hd * Dv, state, lin_q_.data() + r * Hd * Dk, lin_k_.data() + r * Hd * Dk,
                          lin_v_.data() + r * Hd * Dv, lin_g_.data() + r * Hd, lin_beta_.data() + r * Hd, d);
  }
  rmsnorm_forward(lin_tmp_.data(), lin_rn_.data(), lin_o_.data(), p + w.o_norm, n * Hd, Dv, eps);
  silu_gate_forward(lin_o_.data(), lin_tmp_.data(), proj_.data() + cz, P, n, Hd * Dv);
  std::copy(x, x + n * D, x_mid);
  gemm(x_mid, lin_o_.data(), p + w.wo, GemmShape{n, D, Hd * Dv, Trans::kNo, Trans::kYes}, 1.0f, MatmulPrecision::kFp32);
}

void Decoder::forward(const int32_t* tokens, const int32_t* seqs, int64_t n) {
  MT_CHECK(n > 0 && n <= opt_.max_rows, "decoder: {} rows, at most {}", n, opt_.max_rows);
  const int64_t D = c_.d_model, V = c_.vocab_size;
  for (int64_t r = 0; r < n; ++r) {
    const int32_t b = seqs[r];
    MT_CHECK(b >= 0 && b < opt_.batch, "decoder: sequence {} of {}", b, opt_.batch);
    MT_CHECK(tokens[r] >= 0 && tokens[r] < V, "decoder: token {} out of vocab {}", tokens[r], V);
    const bool starts = r == 0 || seqs[r - 1] != b;
    first_row_[size_t(r)] = starts ? r : first_row_[size_t(r - 1)];
    pos_[size_t(r)] = cache_.length(b) + (r - first_row_[size_t(r)]);
    MT_CHECK(pos_[size_t(r)] < opt_.max_len, "decoder: position {} of sequence {} past max_len {}", pos_[size_t(r)],
             b, opt_.max_len);
    // The document of the row: the cached one's, or a new one after a separator in this call
    // (not after a leading one: decoder.h).
    const bool after_separator = !starts && tokens[r - 1] == opt_.document_separator && pos_[size_t(r)] > 1;
    doc_start_[size_t(r)] = starts            ? cache_.document_start(b)
                            : after_separator ? pos_[size_t(r)]
                                              : doc_start_[size_t(r - 1)];
  }
  seqs_ = seqs;
  embedding_forward(x_.data(), tokens, params_ + off_.embed, n, D);
  BlockContext ctx;
  ctx.c = &c_;
  ctx.B = n;
  ctx.T = 1;
  ctx.N = n;
  ctx.prec = MatmulPrecision::kFp32;
  ctx.w = ParamSpan{params_, nullptr, 0};
  ctx.we = ctx.w;
  ctx.experts = &experts_;
  int64_t moe_index = 0;
  for (int64_t l = 0; l < c_.n_layers; ++l) {
    if (c_.is_delta(l))
      delta(x_mid_.data(), x_.data(), l, n);
    else
      attention(x_mid_.data(), x_.data(), l, n);
    FfnStats fs;
    const bool moe = c_.is_moe(l);
    const float* bias = (router_bias_ && moe) ? router_bias_ + moe_index * c_.n_experts : nullptr;
    ffn_block_forward(x_.data(), moe ? ffn_moe_ : ffn_dense_, fs, x_mid_.data(), off_.layers[size_t(l)], bias, l,
                      ctx);
    moe_index += moe ? 1 : 0;
  }
  rmsnorm_forward(a_.data(), rstd_.data(), x_.data(), params_ + off_.final_norm, n, D, float(c_.norm_eps));
  linear_forward(logits_.data(), a_.data(), params_ + off_.head, n, V, D, MatmulPrecision::kFp32);
  for (int64_t r = 0; r < n; ++r)
    if (r + 1 == n || seqs[r + 1] != seqs[r]) {
      cache_.advance(seqs[r], r - first_row_[size_t(r)] + 1);
      const bool separator = tokens[r] == opt_.document_separator && pos_[size_t(r)] > 0;
      cache_.set_document_start(seqs[r], separator ? pos_[size_t(r)] + 1 : doc_start_[size_t(r)]);
    }
}

}  // namespace mt
