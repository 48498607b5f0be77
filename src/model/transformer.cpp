// transformer.cpp — layer loop, fused LM head + cross-entropy (forward and
// backward chunk by chunk), the MTP modules, and the backward sweep.
#include "model/transformer.h"

#include <algorithm>

#include "core/check.h"
#include "core/hash.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/cross_entropy.h"
#include "core/token_flags.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"

namespace mt {

namespace {
int64_t rows_of(int64_t seq_len, const ContextExchange* cx) { return cx ? int64_t(cx->positions().size()) : seq_len; }
}  // namespace

Transformer::Transformer(const ModelConfig& c, int64_t batch, int64_t seq_len, MatmulPrecision prec,
                         LayerActivations acts, ContextExchange* cx)
    : c_(c),
      B_(batch),
      T_(rows_of(seq_len, cx)),
      N_(batch * rows_of(seq_len, cx)),
      T_seq_(seq_len),
      cp_(cx ? cx->cp() : 1),
      prec_(prec),
      acts_(acts),
      mtp_weight_(c.mtp_loss_weight) {
  MT_CHECK(!cx || cx->seq_len() == seq_len, "context exchange for {} tokens, model for {}", cx ? cx->seq_len() : 0,
           seq_len);
  off_ = build_layout(c_, layout_);
  BufferSizer sizer(BufferSizer::Mode::kAllocate, operand_form(prec_));
  size_buffers(sizer);
  if (cx) {  // this process's rows of the whole sequence's tables
    pos_ = cx->positions();
    const int64_t half = c_.rope_dim() / 2;
    std::vector<float> cos_full(size_t(T_seq_ * half)), sin_full(cos_full.size());
    rope_tables(cos_full.data(), sin_full.data(), T_seq_, c_.rope_dim(), c_.rope_params());
    for (int64_t t = 0; t < T_; ++t) {
      std::copy_n(cos_full.data() + pos_[size_t(t)] * half, half, rope_cos_.data() + t * half);
      std::copy_n(sin_full.data() + pos_[size_t(t)] * half, half, rope_sin_.data() + t * half);
    }
    ctx_.cp = cx;
    ctx_.q_pos = pos_.data();
    ctx_.T_seq = T_seq_;
    ctx_.cp_buf = &cp_buf_;
  } else {
    rope_tables(rope_cos_.data(), rope_sin_.data(), T_, c_.rope_dim(), c_.rope_params());
  }
  ctx_.c = &c_;
  ctx_.B = B_;
  ctx_.T = T_;
  ctx_.N = N_;
  ctx_.prec = prec_;
  ctx_.rope_cos = rope_cos_.data();
  ctx_.rope_sin = rope_sin_.data();
  identity_experts_ = IdentityDispatcher(c_.n_experts);
}

Transformer::Transformer(const ModelConfig& c, int64_t batch, int64_t seq_len, MatmulPrecision prec,
                         LayerActivations acts, int64_t cp, BufferSizer& s)
    : c_(c),
      B_(batch),
      T_(seq_len / cp),
      N_(batch * (seq_len / cp)),
      T_seq_(seq_len),
      cp_(cp),
      prec_(prec),
      acts_(acts) {
  size_buffers(s);
}

// With recomputation, layer l uses the buffers of the first layer whose
// buffers have exactly the same sizes (same kind: attention or gated delta,
// dense or MoE, window and KV heads as far as they change a size).
void Transformer::share_layer_buffers() {
  act_of_.assign(size_t(c_.n_layers), 0);
  std::vector<std::vector<int64_t>> shapes;
  for (int64_t l = 0; l < c_.n_layers; ++l) {
    act_of_[l] = l;
    if (acts_ == LayerActivations::kKeep) continue;
    BufferSizer count(BufferSizer::Mode::kCountOnly);
    AttnActs a;
    DeltaActs d;
    FfnActs f;
    if (c_.is_delta(l))
      d.allocate(c_, B_, T_, count);
    else
      a.allocate(c_, l, B_, T_, count);
    f.allocate(c_, l, B_, T_, count);
    std::vector<int64_t> shape = count.sizes();
    shape.push_back(c_.is_delta(l) ? 1 : 0);
    shape.push_back(c_.is_moe(l) ? 1 : 0);
    for (int64_t j = 0; j < l; ++j)
      if (act_of_[j] == j && shapes[size_t(j)] == shape) {
        act_of_[l] = j;
        break;
      }
    shapes.push_back(std::move(shape));
  }
  held_.assign(size_t(c_.n_layers), -1);
}

void Transformer::set_layer_activations(LayerActivations acts) {
  if (acts == acts_) return;
  acts_ = acts;
  // Free the per-layer buffers, then size again (every other buffer keeps its size).
  x_mid_.clear();
  attn_.clear();
  delta_.clear();
  ffn_.clear();
  BufferSizer sizer(BufferSizer::Mode::kAllocate, operand_form(prec_));
  size_buffers(sizer);
}

void Transformer::size_buffers(BufferSizer& s) {
  const int64_t D = c_.d_model, Dr = c_.rope_dim();
  share_layer_buffers();
  s(rope_cos_, T_ * Dr / 2);
  s(rope_sin_, T_ * Dr / 2);
  s(inputs_, N_);
  s(targets_, N_);
  xs_.resize(c_.n_layers + 1);
  for (auto& x : xs_) s(x, N_ * D);
  x_mid_.resize(c_.n_layers);
  for (int64_t l = 0; l < c_.n_layers; ++l)
    if (act_of_[l] == l) s(x_mid_[l], N_ * D);
  attn_.resize(c_.n_layers);
  delta_.resize(c_.n_layers);
  ffn_.resize(c_.n_layers);
  for (int64_t l = 0; l < c_.n_layers; ++l) {
    if (act_of_[l] != l) continue;
    if (c_.is_delta(l))
      delta_[l].allocate(c_, B_, T_, s);
    else
      attn_[l].allocate(c_, l, B_, T_, s);
    ffn_[l].allocate(c_, l, B_, T_, s);
  }
  mtp_.resize(c_.mtp_depth);
  for (int64_t k = 0; k < c_.mtp_depth; ++k) mtp_[k].allocate(c_, c_.n_layers + k, B_, T_, s);
  if (c_.mtp_depth > 0) mtp_scratch_.allocate(c_, B_, T_, s);
  s(hf_, N_ * D);
  s(rstd_f_, N_);
  s(logits_, std::min(N_, kHeadChunk) * c_.vocab_size);
  s(dlogits_, s.gemm_inputs() == OperandForm::kFp32 ? 0 : std::min(N_, kHeadChunk) * c_.vocab_size);
  s(losses_, N_);
  s(dres_, N_ * D);
  s(dhf_, N_ * D);
  attn_scratch_.allocate(c_, B_, T_, s);
  ffn_scratch_.allocate(c_, B_, T_, s);
  delta_scratch_.allocate(c_, B_, T_, s);
  if (cp_ > 1 && !c_.mla()) {  // the whole sequence's K, V and their gradients, of the widest kv layer
    int64_t hkv = 0;
    for (int64_t l = 0; l < c_.n_layers; ++l) hkv = std::max(hkv, c_.is_delta(l) ? 0 : c_.kv_heads(l));
    const int64_t n = B_ * hkv * T_seq_ * c_.head_dim();
    s(cp_buf_.k, n);
    s(cp_buf_.v, n);
    s(cp_buf_.dk, n);
    s(cp_buf_.dv, n);
  } else if (cp_ > 1) {  // MLA: the whole sequence's latent and RoPE key, decompressed per head
    const int64_t Nf = B_ * T_seq_, H = c_.n_heads, Dc = c_.kv_lora_rank, Dr = c_.qk_rope_head_dim;
    const int64_t Dqk = c_.qk_head_dim(), Dv = c_.v_head_dim, KV = H * (c_.qk_nope_head_dim + Dv);
    s(cp_buf_.latent, Nf * Dc);
    s(cp_buf_.rope_key, Nf * Dr);
    s(cp_buf_.kvf, Nf * KV);
    s(cp_buf_.k, Nf * H * Dqk);
    s(cp_buf_.v, Nf * H * Dv);
    s(cp_buf_.dk, Nf * H * Dqk);
    s(cp_buf_.dv, Nf * H * Dv);
    s(cp_buf_.dkvf, Nf * KV);
    s(cp_buf_.dlatent, Nf * Dc);
    s(cp_buf_.drope, Nf * Dr);
  }
}

int64_t Transformer::activation_bytes() const {
  int64_t b = vector_bytes(rope_cos_) + vector_bytes(rope_sin_) + vector_bytes(inputs_) + vector_bytes(targets_) +
              vector_bytes(xs_) + vector_bytes(x_mid_) + vector_bytes(hf_) + vector_bytes(rstd_f_) +
              vector_bytes(logits_) + vector_bytes(dlogits_) + vector_bytes(losses_) + vector_bytes(dres_) +
              vector_bytes(dhf_) + attn_scratch_.bytes() + ffn_scratch_.bytes() + mtp_scratch_.bytes() +
              delta_scratch_.bytes() + vector_bytes(cp_buf_.k) + vector_bytes(cp_buf_.v) + vector_bytes(cp_buf_.dk) +
              vector_bytes(cp_buf_.dv) + vector_bytes(cp_buf_.latent) + vector_bytes(cp_buf_.rope_key) +
              vector_bytes(cp_buf_.kvf) + vector_bytes(cp_buf_.dkvf) + vector_bytes(cp_buf_.dlatent) +
              vector_bytes(cp_buf_.drope);
  for (const MtpActs& m : mtp_) b += m.bytes();
  for (const AttnActs& a : attn_) b += a.bytes();
  for (const DeltaActs& a : delta_) b += a.bytes();
  for (const FfnActs& f : ffn_) b += f.bytes();
  return b;
}

int64_t Transformer::activation_bytes(const ModelConfig& c, int64_t batch, int64_t seq_len, MatmulPrecision prec,
                                      LayerActivations acts, int64_t cp) {
  BufferSizer counter(BufferSizer::Mode::kCountOnly, operand_form(prec));
  Transformer sizing(c, batch, seq_len, prec, acts, cp, counter);
  return counter.bytes();
}

int64_t Transformer::n_moe_layers() const {
  int64_t n = 0;
  for (int64_t u = 0; u < c_.n_units(); ++u) n += c_.is_moe(u) ? 1 : 0;
  return n;
}

void Transformer::add_moe_stats(ForwardStats& st, FfnStats& fs, int64_t moe_layers) {
  st.aux_loss += fs.aux_loss / double(moe_layers);
  st.z_loss += fs.z_loss / double(moe_layers);
  st.dropped += fs.dropped;
  st.assignments += fs.assignments;
  for (int64_t b = 0; b < B_; ++b) st.dropped_per_sequence[size_t(b)] += fs.dropped_per_sequence[size_t(b)];
  st.expert_load.push_back(std::move(fs.load));
}

void Transformer::mark_documents(ForwardStats& st, const int32_t* tokens, int64_t stride) {
  ctx_.doc_start = nullptr;
  if (doc_sep_ < 0) return;
  doc_start_.resize(size_t(N_));
  bool packed = false;
  for (int64_t b = 0; b < B_; ++b) {  // along the whole row; this process keeps its positions' starts
    int32_t start = 0;
    for (int64_t t = 0, i = 0; t < T_seq_ && i < T_; ++t) {
      if (t > 0 && token_id(tokens[b * stride + t - 1]) == doc_sep_) start = int32_t(t), packed = true;
      if (t == position(i)) doc_start_[size_t(b * T_ + i++)] = start;
    }
  }
  if (packed) ctx_.doc_start = doc_start_.data();
  AttentionDims d{B_, 1, 1, T_seq_, 1, 0};
  d.Tq = T_;
  d.q_pos = pos_.empty() ? nullptr : pos_.data();
  d.doc_start = ctx_.doc_start;
  st.keys_global = int64_t(attention_keys(d));
  d.window = c_.window;
  st.keys_local = c_.window > 0 ? int64_t(attention_keys(d)) : 0;
}

void Transformer::run_forward(ForwardStats& st, ParamProvider& pp, Grads grads, const int32_t* tokens,
                              int64_t stride, const float* router_bias) {
  const int64_t D = c_.d_model;
  for (int64_t b = 0; b < B_; ++b)
    for (int64_t t = 0; t < T_; ++t) {
      inputs_[b * T_ + t] = token_id(tokens[b * stride + position(t)]);
      targets_[b * T_ + t] = target_of(tokens[b * stride + position(t) + 1]);
    }
  for (int64_t n = 0; n < N_; ++n)
    MT_CHECK(inputs_[n] >= 0 && inputs_[n] < c_.vocab_size, "token {} out of vocab {}", inputs_[n],
             c_.vocab_size);
  mark_documents(st, tokens, stride);
  ctx_.experts = pp.dispatcher() ? pp.dispatcher() : &identity_experts_;
  st.dropped_per_sequence.assign(size_t(B_), 0);
  root_ = pp.acquire_root(grads);
  embedding_forward(xs_[0].data(), inputs_.data(), root_.of(off_.embed).at(off_.embed), N_, D);
  const int64_t moe_layers = n_moe_layers();
  int64_t moe_index = 0;
  for (int64_t l = 0; l < c_.n_layers; ++l) {
    const LayerParams lp = pp.acquire_layer(l, Pass::kForward);
    ctx_.w = lp.dense;
    ctx_.we = lp.experts;
    FfnStats fs;
    layer_forward(l, fs, router_bias, moe_index);
    if (c_.is_moe(l)) {
      add_moe_stats(st, fs, moe_layers);
      ++moe_index;
    }
    pp.release_layer(l, Pass::kForward);
  }
  rmsnorm_forward(hf_.out(), hf_.form, rstd_f_.data(), xs_[c_.n_layers].data(), root_.of(off_.final_norm).at(off_.final_norm),
                  N_, D, float(c_.norm_eps));
}

void Transformer::layer_forward(int64_t l, FfnStats& fs, const float* router_bias, int64_t moe_index) {
  const int64_t a = act_of_[l];
  if (off_.layers[l].delta)
    delta_block_forward(x_mid_[a].data(), delta_[a], xs_[l].data(), off_.layers[l].delta_w, ctx_);
  else
    attention_block_forward(x_mid_[a].data(), attn_[a], xs_[l].data(), off_.layers[l].attn, l, ctx_);
  const float* bias = (router_bias && c_.is_moe(l)) ? router_bias + moe_index * c_.n_experts : nullptr;
  ffn_block_forward(xs_[l + 1].data(), ffn_[a], fs, x_mid_[a].data(), off_.layers[l], bias, l, ctx_);
  held_[a] = l;
}

double Transformer::head_loss(ParamProvider& pp, Grads grads, float grad_scale, GemmInput hf,
                              const int32_t* targets, float* dhf, const PolicyObjective* policy) {
  const int64_t D = c_.d_model, V = c_.vocab_size;
  const ParamSpan& head = root_.of(off_.head);
  const float* W = head.at(off_.head);
  const bool rl = policy != nullptr && grads == Grads::kYes;
  int64_t local_valid = 0;
  for (int64_t n = 0; n < N_; ++n) local_valid += targets[n] >= 0 ? 1 : 0;
  // Mean over the predicted tokens of every data-parallel replica; this
  // process returns its share of it (the shares sum to the mean). The policy
  // objective's weights are already global.
  const int64_t valid = rl ? 1 : int64_t(pp.sum_over_replicas(double(local_valid)));
  const float ce_scale = valid > 0 ? grad_scale / float(valid) : 0.0f;
  // The first chunk's product writes the head's gradient, the others add to it (grad_whole).
  for (int64_t r0 = 0; r0 < N_; r0 += kHeadChunk) {
    const int64_t R = std::min(kHeadChunk, N_ - r0);
    linear_forward(logits_.data(), hf.at(r0 * D), W, R, V, D, prec_);
    // The loss's gradient in the logits (in place), or the cross-entropy's
    // in the products' form where it writes one.
    GemmInput dlogits(logits_.data());
    if (rl && policy->teacher_logp != nullptr) {
      const PolicyObjective& p = *policy;
      distill_entropy_.resize(size_t(kHeadChunk));
      distill_loss_forward_backward(losses_.data() + r0, logits_.data(), p.teacher_logp + r0 * V, p.weights + r0, R, V,
                                    p.divergence, grad_scale, distill_entropy_.data());
      for (int64_t r = r0; r < r0 + R; ++r)
        p.stats[r] = PolicyTokenStats{0.0f, distill_entropy_[size_t(r - r0)],
                                      p.weights[r] > 0 ? losses_[r] / p.weights[r] : 0.0f, 0};
    } else if (rl) {
      const PolicyObjective& p = *policy;
      policy_loss_forward_backward(losses_.data() + r0, p.stats + r0, logits_.data(), targets + r0, p.weights + r0,
                                   p.advantages + r0, p.old_logp ? p.old_logp + r0 : nullptr,
                                   p.ref_logp ? p.ref_logp + r0 : nullptr, R, V, p.params, grad_scale);
    } else if (grads == Grads::kYes) {
      if (!dlogits_.storage.empty()) {
        cross_entropy_forward_backward(losses_.data() + r0, logits_.data(), dlogits_.out(), dlogits_.form, targets + r0,
                                       R, V, ce_scale);
        dlogits = dlogits_.in();
      } else {
        cross_entropy_forward_backward(losses_.data() + r0, logits_.data(), targets + r0, R, V, ce_scale);
      }
    } else {
      cross_entropy_forward(losses_.data() + r0, logits_.data(), targets + r0, R, V);
      continue;
    }
    linear_backward(dhf + r0 * D, head.grad_whole(off_.head, V * D), dlogits, hf.at(r0 * D), W, R, V, D, 0.0f, prec_);
  }
  double total = 0.0;
  for (int64_t n = 0; n < N_; ++n) total += losses_[n];
  if (rl) return total;  // weighted: this replica's share of the objective
  return valid > 0 ? total / double(valid) : 0.0;
}

void Transformer::run_mtp_forward(ForwardStats& st, ParamProvider& pp, Grads grads, const int32_t* tokens,
                                  float grad_scale, const float* router_bias) {
  if (c_.mtp_depth == 0) return;
  const int64_t moe_layers = n_moe_layers();
  int64_t moe_index = 0;
  for (int64_t l = 0; l < c_.n_layers; ++l) moe_index += c_.is_moe(l) ? 1 : 0;
  // Each CE_k is a mean over predicted tokens; the objective holds lambda / D_mtp of their sum.
  st.mtp_weight = mtp_weight_;
  const float weight = float(mtp_weight_ / double(c_.mtp_depth));
  for (int64_t k = 0; k < c_.mtp_depth; ++k) {
    const int64_t u = c_.n_layers + k;
    MtpActs& a = mtp_[k];
    mtp_tokens(a, tokens, tokens_per_sequence(), k + 1, B_, T_, pos_.empty() ? nullptr : pos_.data());
    for (int64_t n = 0; n < N_; ++n)
      MT_CHECK(a.tok[n] >= 0 && a.tok[n] < c_.vocab_size, "token {} out of vocab {}", a.tok[n], c_.vocab_size);
    const LayerParams lp = pp.acquire_layer(u, Pass::kForward);
    ctx_.w = lp.dense;
    ctx_.we = lp.experts;
    FfnStats fs;
    const float* bias = (router_bias && c_.is_moe(u)) ? router_bias + moe_index * c_.n_experts : nullptr;
    mtp_module_forward(a, fs, k == 0 ? xs_[c_.n_layers].data() : mtp_[k - 1].h.data(),
                       root_.of(off_.embed).at(off_.embed), off_.mtp[k], bias, u, ctx_);
    if (c_.is_moe(u)) {
      add_moe_stats(st, fs, moe_layers);
      ++moe_index;
    }
    st.mtp_loss += head_loss(pp, grads, grad_scale * weight, a.hf.in(), a.tgt.data(), a.dhf.data()) /
                   double(c_.mtp_depth);
    pp.release_layer(u, Pass::kForward);
  }
}

ForwardStats Transformer::forward(const float* params, const int32_t* tokens, const float* router_bias,
                                  Objective obj) {
  FlatParams flat(params, nullptr);
  return forward(flat, tokens, router_bias, obj);
}

ForwardStats Transformer::forward(ParamProvider& pp, const int32_t* tokens, const float* router_bias,
                                  Objective obj) {
  ForwardStats st;
  const bool mtp = obj == Objective::kTraining;
  run_forward(st, pp, Grads::kNo, tokens, mtp ? tokens_per_sequence() : T_seq_ + 1, router_bias);
  st.loss = head_loss(pp, Grads::kNo, 0.0f, hf_.in(), targets_.data(), dhf_.data());
  if (mtp) run_mtp_forward(st, pp, Grads::kNo, tokens, 0.0f, router_bias);
  st.total_loss = st.loss + c_.aux_loss_coef * st.aux_loss + c_.z_loss_coef * st.z_loss + st.mtp_weight * st.mtp_loss;
  pp.release_root();
  return st;
}

void Transformer::forward_logits(const float* params, const int32_t* tokens, const float* router_bias,
                                 float* logits_NV) {
  FlatParams flat(params, nullptr);
  forward_logits(flat, tokens, router_bias, logits_NV);
}

void Transformer::forward_logits(ParamProvider& pp, const int32_t* tokens, const float* router_bias, float* logits_NV) {
  ForwardStats st;
  run_forward(st, pp, Grads::kNo, tokens, T_seq_ + 1, router_bias);
  const int64_t D = c_.d_model, V = c_.vocab_size;
  for (int64_t r0 = 0; r0 < N_; r0 += kHeadChunk) {
    const int64_t R = std::min(kHeadChunk, N_ - r0);
    linear_forward(logits_NV + r0 * V, hf_.in().at(r0 * D), root_.of(off_.head).at(off_.head), R, V, D, prec_);
  }
  pp.release_root();
}

ForwardStats Transformer::forward_backward(const float* params, float* grads, const int32_t* tokens,
                                           float grad_scale, const float* router_bias) {
  FlatParams flat(params, grads);
  return forward_backward(flat, tokens, grad_scale, router_bias);
}

ForwardStats Transformer::forward_backward(ParamProvider& pp, const int32_t* tokens, float grad_scale,
                                           const float* router_bias) {
  ForwardStats st;
  run_forward(st, pp, Grads::kYes, tokens, tokens_per_sequence(), router_bias);
  st.loss = head_loss(pp, Grads::kYes, grad_scale, hf_.in(), targets_.data(), dhf_.data(), policy_);
  run_mtp_forward(st, pp, Grads::kYes, tokens, grad_scale, router_bias);
  st.total_loss = st.loss + c_.aux_loss_coef * st.aux_loss + c_.z_loss_coef * st.z_loss + st.mtp_weight * st.mtp_loss;

  const int64_t D = c_.d_model;
  // Router losses are means over each replica's groups; the objective is their mean over replicas.
  const int64_t moe_layers = n_moe_layers() * pp.replicas();
  const float aux_coef = moe_layers ? float(c_.aux_loss_coef / double(moe_layers)) * grad_scale : 0.0f;
  const float z_coef = moe_layers ? float(c_.z_loss_coef / double(moe_layers)) * grad_scale : 0.0f;
  // The MTP modules last to first: dres_ ends holding d h^0 from module 1 (the
  // main stream's share), to which the final norm's gradient is added.
  float* dembed = root_.of(off_.embed).grad(off_.embed);
  for (int64_t k = c_.mtp_depth - 1; k >= 0; --k) {
    const int64_t u = c_.n_layers + k;
    const LayerParams lp = pp.acquire_layer(u, Pass::kBackward);
    ctx_.w = lp.dense;
    ctx_.we = lp.experts;
    mtp_module_backward(dres_.data(), k + 1 < c_.mtp_depth ? Accumulate::kYes : Accumulate::kNo, mtp_scratch_,
                        attn_scratch_, ffn_scratch_, mtp_[k], k == 0 ? xs_[c_.n_layers].data() : mtp_[k - 1].h.data(),
                        dembed, off_.mtp[k], u, aux_coef, z_coef, ctx_);
    pp.release_layer(u, Pass::kBackward);
  }
  const ParamSpan& fnorm = root_.of(off_.final_norm);
  rmsnorm_backward(dres_.data(), fnorm.grad(off_.final_norm), dhf_.data(), xs_[c_.n_layers].data(),
                   fnorm.at(off_.final_norm), rstd_f_.data(), N_, D, c_.mtp_depth > 0 ? 1.0f : 0.0f);
  int64_t moe_index = 0;  // MoE layers below l: the router-bias row of layer l
  for (int64_t l = 0; l < c_.n_layers; ++l) moe_index += c_.is_moe(l) ? 1 : 0;
  for (int64_t l = c_.n_layers - 1; l >= 0; --l) {
    const LayerParams lp = pp.acquire_layer(l, Pass::kBackward);
    ctx_.w = lp.dense;
    ctx_.we = lp.experts;
    const int64_t a = act_of_[l];
    if (c_.is_moe(l)) --moe_index;
    if (held_[a] != l) {  // recomputation: the buffers hold another layer's activations
      // Rewrites xs_[l + 1] with the same bits (deterministic kernels); only
      // layer l + 1's finished backward read it. The router stats were counted in the forward.
      FfnStats discarded;
      layer_forward(l, discarded, router_bias, moe_index);
    }
    ffn_block_backward(dres_.data(), ffn_scratch_, ffn_[a], x_mid_[a].data(), off_.layers[l], l, aux_coef,
                       z_coef, ctx_);
    if (off_.layers[l].delta)
      delta_block_backward(dres_.data(), delta_scratch_, delta_[a], xs_[l].data(), off_.layers[l].delta_w, ctx_);
    else
      attention_block_backward(dres_.data(), attn_scratch_, attn_[a], xs_[l].data(), off_.layers[l].attn, l,
                               ctx_);
    pp.release_layer(l, Pass::kBackward);
  }
  embedding_backward(root_.of(off_.embed).grad(off_.embed), dres_.data(), inputs_.data(), N_, D);
  pp.release_root();
  return st;
}

}  // namespace mt

namespace mt {
uint64_t Transformer::routing_hash() const {
  Hasher h;
  auto add = [&](const FfnActs& a) {
    h.update(a.idx.data(), a.idx.size() * sizeof(int32_t));
    h.update(a.slot.data(), a.slot.size() * sizeof(int32_t));
  };
  for (const FfnActs& a : ffn_) add(a);
  for (const MtpActs& m : mtp_) add(m.ffn);
  return h.digest();
}
}  // namespace mt
