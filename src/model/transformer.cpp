// transformer.cpp — layer loop, fused LM head + cross-entropy (forward and
// backward chunk by chunk), and the backward sweep.
#include "model/transformer.h"

#include <algorithm>

#include "core/check.h"
#include "core/hash.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"

namespace mt {

Transformer::Transformer(const ModelConfig& c, int64_t batch, int64_t seq_len, MatmulPrecision prec)
    : c_(c), B_(batch), T_(seq_len), N_(batch * seq_len), prec_(prec) {
  off_ = build_layout(c_, layout_);
  const int64_t D = c_.d_model, Dh = c_.head_dim();
  rope_cos_.resize(T_ * Dh / 2);
  rope_sin_.resize(T_ * Dh / 2);
  rope_tables(rope_cos_.data(), rope_sin_.data(), T_, Dh, c_.rope_theta);
  inputs_.resize(N_);
  targets_.resize(N_);
  xs_.assign(c_.n_layers + 1, std::vector<float>(N_ * D));
  x_mid_.assign(c_.n_layers, std::vector<float>(N_ * D));
  attn_.resize(c_.n_layers);
  ffn_.resize(c_.n_layers);
  for (int64_t l = 0; l < c_.n_layers; ++l) {
    attn_[l].allocate(c_, l, B_, T_);
    ffn_[l].allocate(c_, l, B_, T_);
  }
  hf_.resize(N_ * D);
  rstd_f_.resize(N_);
  logits_.resize(std::min(N_, kHeadChunk) * c_.vocab_size);
  losses_.resize(N_);
  dres_.resize(N_ * D);
  dhf_.resize(N_ * D);
  attn_scratch_.allocate(c_, B_, T_);
  ffn_scratch_.allocate(c_, B_, T_);
  ctx_.c = &c_;
  ctx_.B = B_;
  ctx_.T = T_;
  ctx_.N = N_;
  ctx_.prec = prec_;
  ctx_.rope_cos = rope_cos_.data();
  ctx_.rope_sin = rope_sin_.data();
}

int64_t Transformer::n_moe_layers() const {
  int64_t n = 0;
  for (int64_t l = 0; l < c_.n_layers; ++l) n += c_.is_moe(l) ? 1 : 0;
  return n;
}

void Transformer::run_forward(ForwardStats& st, const float* params, const int32_t* tokens,
                              const float* router_bias) {
  const int64_t D = c_.d_model;
  for (int64_t b = 0; b < B_; ++b)
    for (int64_t t = 0; t < T_; ++t) {
      inputs_[b * T_ + t] = tokens[b * (T_ + 1) + t];
      targets_[b * T_ + t] = tokens[b * (T_ + 1) + t + 1];
    }
  for (int64_t n = 0; n < N_; ++n)
    MT_CHECK(inputs_[n] >= 0 && inputs_[n] < c_.vocab_size, "token {} out of vocab {}", inputs_[n],
             c_.vocab_size);
  ctx_.P = params;
  embedding_forward(xs_[0].data(), inputs_.data(), params + off_.embed, N_, D);
  const int64_t moe_layers = n_moe_layers();
  int64_t moe_index = 0;
  for (int64_t l = 0; l < c_.n_layers; ++l) {
    attention_block_forward(x_mid_[l].data(), attn_[l], xs_[l].data(), off_.layers[l].attn, l, ctx_);
    FfnStats fs;
    const float* bias = (router_bias && c_.is_moe(l)) ? router_bias + moe_index * c_.n_experts : nullptr;
    ffn_block_forward(xs_[l + 1].data(), ffn_[l], fs, x_mid_[l].data(), off_.layers[l], bias, l, ctx_);
    if (c_.is_moe(l)) {
      st.aux_loss += fs.aux_loss / double(moe_layers);
      st.z_loss += fs.z_loss / double(moe_layers);
      st.dropped += fs.dropped;
      st.assignments += fs.assignments;
      st.expert_load.push_back(std::move(fs.load));
      ++moe_index;
    }
  }
  rmsnorm_forward(hf_.data(), rstd_f_.data(), xs_[c_.n_layers].data(), params + off_.final_norm, N_, D,
                  float(c_.norm_eps));
}

double Transformer::head_loss(const float* params, float* grads, float grad_scale) {
  const int64_t D = c_.d_model, V = c_.vocab_size;
  const float* W = params + off_.head;
  int64_t valid = 0;
  for (int64_t n = 0; n < N_; ++n) valid += targets_[n] >= 0 ? 1 : 0;
  const float ce_scale = valid > 0 ? grad_scale / float(valid) : 0.0f;
  for (int64_t r0 = 0; r0 < N_; r0 += kHeadChunk) {
    const int64_t R = std::min(kHeadChunk, N_ - r0);
    linear_forward(logits_.data(), hf_.data() + r0 * D, W, R, V, D, prec_);
    if (grads) {
      cross_entropy_forward_backward(losses_.data() + r0, logits_.data(), targets_.data() + r0, R, V, ce_scale);
      linear_backward_input(dhf_.data() + r0 * D, logits_.data(), W, R, V, D, 0.0f, prec_);
      linear_backward_weight(grads + off_.head, logits_.data(), hf_.data() + r0 * D, R, V, D, prec_);
    } else {
      cross_entropy_forward(losses_.data() + r0, logits_.data(), targets_.data() + r0, R, V);
    }
  }
  double total = 0.0;
  for (int64_t n = 0; n < N_; ++n) total += losses_[n];
  return valid > 0 ? total / double(valid) : 0.0;
}

ForwardStats Transformer::forward(const float* params, const int32_t* tokens, const float* router_bias) {
  ForwardStats st;
  run_forward(st, params, tokens, router_bias);
  st.loss = head_loss(params, nullptr, 0.0f);
  st.total_loss = st.loss + c_.aux_loss_coef * st.aux_loss + c_.z_loss_coef * st.z_loss;
  return st;
}

ForwardStats Transformer::forward_backward(const float* params, float* grads, const int32_t* tokens,
                                           float grad_scale, const float* router_bias) {
  ForwardStats st;
  run_forward(st, params, tokens, router_bias);
  ctx_.G = grads;
  st.loss = head_loss(params, grads, grad_scale);
  st.total_loss = st.loss + c_.aux_loss_coef * st.aux_loss + c_.z_loss_coef * st.z_loss;

  const int64_t D = c_.d_model;
  rmsnorm_backward(dres_.data(), grads + off_.final_norm, dhf_.data(), xs_[c_.n_layers].data(),
                   params + off_.final_norm, rstd_f_.data(), N_, D, 0.0f);
  const int64_t moe_layers = n_moe_layers();
  const float aux_coef = moe_layers ? float(c_.aux_loss_coef / double(moe_layers)) * grad_scale : 0.0f;
  const float z_coef = moe_layers ? float(c_.z_loss_coef / double(moe_layers)) * grad_scale : 0.0f;
  for (int64_t l = c_.n_layers - 1; l >= 0; --l) {
    ffn_block_backward(dres_.data(), ffn_scratch_, ffn_[l], x_mid_[l].data(), off_.layers[l], l, aux_coef,
                       z_coef, ctx_);
    attention_block_backward(dres_.data(), attn_scratch_, attn_[l], xs_[l].data(), off_.layers[l].attn, l,
                             ctx_);
  }
  embedding_backward(grads + off_.embed, dres_.data(), inputs_.data(), N_, D);
  return st;
}

}  // namespace mt

namespace mt {
uint64_t Transformer::routing_hash() const {
  Hasher h;
  for (const FfnActs& a : ffn_) {
    h.update(a.idx.data(), a.idx.size() * sizeof(int32_t));
    h.update(a.slot.data(), a.slot.size() * sizeof(int32_t));
  }
  return h.digest();
}
}  // namespace mt
