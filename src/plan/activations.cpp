// activations.cpp — see activations.h. Each term below states what keeps the
// tensor alive until backward and the term of Korthikanti et al. 2022
// (section 4.1) it corresponds to; all are per token of the micro-batch and
// divided by t, because with sequence parallelism the norm regions hold s/t
// tokens and the tensor-parallel regions H/t heads or F/t hidden units (the
// MoE block works on the sequence-parallel share of the tokens).
#include "plan/activations.h"

#include <algorithm>

namespace mt::plan {
namespace {

constexpr RecomputeMask bit(ActModule m) { return RecomputeMask(m); }

struct Builder {
  std::vector<ActTerm>* out;
  double t;
  void add(const char* op, RecomputeMask modules, double bytes) {
    out->push_back(ActTerm{op, modules, bytes / t});
  }
};

// Bytes per element of a tensor that is the input of a linear layer: FP8 when the layout caches those in
// FP8 (DeepSeek-V3), else the activation dtype.
double linear_input_bytes(const ActivationOptions& o) {
  return o.fp8_cache_bytes > 0 ? o.fp8_cache_bytes : o.elem_bytes;
}

// RMSNorm over `width` (Zhang & Sennrich 2019): backward needs the input x and
// the fp32 1/rms per token; the output is the next GEMM's input, kept for that
// GEMM's weight gradient unless norms are recomputed (DeepSeek-V3 3.2.3).
// Korthikanti: LayerNorm input 2sbh, and the QKV / first-linear input 2sbh.
void rmsnorm_terms(Builder& b, const char* in, const char* out, double width, const ActivationOptions& o) {
  b.add(in, bit(ActModule::kKept), o.elem_bytes * width + o.stat_bytes);
  if (out) b.add(out, bit(ActModule::kNorm), linear_input_bytes(o) * width);
}

// SwiGLU(a, g) = silu(g) * a over `width` hidden units: its backward needs both
// GEMM outputs (2 width; Korthikanti's GeLU input 8sbh for a 4h MLP), and the
// down projection's weight gradient needs the product (width; Korthikanti's
// second-linear input 8sbh), which is cheap to recompute from the pair.
void swiglu_terms(Builder& b, const char* pair, const char* product, double width, double gate_up_bytes,
                  RecomputeMask owner, const ActivationOptions& o) {
  b.add(pair, owner, gate_up_bytes * 2 * width);
  b.add(product, owner | bit(ActModule::kSwiglu), linear_input_bytes(o) * width);
}

// The attention core after q, k, v: flash attention's logsumexp or the materialised probabilities, and
// the output (the output projection's input, Korthikanti 2sbh; flash attention's backward reads it too).
void attention_core_terms(Builder& b, const ModelConfig& c, int64_t l, double out_width, const ActivationOptions& o) {
  const double H = double(c.n_heads);
  if (o.flash_attention) {
    // Flash attention (Dao et al. 2022) keeps only the fp32 logsumexp per query and head and recomputes
    // the probabilities in backward: Korthikanti's 5as^2b term disappears.
    b.add("attn.logsumexp", bit(ActModule::kKept), o.stat_bytes * H);
  } else {
    // Softmax output, read by its own backward and by the product with V (Korthikanti 2as^2b; the
    // dropout mask as^2b and dropout output 2as^2b do not exist without dropout).
    const double keys = c.is_local(l) ? double(std::min(o.seq_len, c.window)) : double(o.seq_len);
    b.add("attn.probabilities", bit(ActModule::kCoreAttn), o.elem_bytes * H * keys);
  }
  // Its dropout mask (Korthikanti sbh) does not exist here.
  b.add("attn.output", bit(ActModule::kKept), linear_input_bytes(o) * out_width);
}

void attention_terms(Builder& b, const ModelConfig& c, int64_t l, const ActivationOptions& o) {
  const double H = double(c.n_heads), Dh = double(c.head_dim());
  // KV heads are replicated when t exceeds them, so each rank holds at least one.
  const double Hkv = double(std::max(c.kv_heads(l), o.tp));
  rmsnorm_terms(b, "attn_norm.input", "attn_norm.output", double(c.d_model), o);
  // q, k, v after RoPE, read again by the attention backward (Korthikanti: Q and K 4sbh, V 2sbh for MHA).
  b.add("attn.qkv", bit(ActModule::kQkv), o.elem_bytes * (H + 2 * Hkv) * Dh);
  if (c.qk_norm)  // q and k before their per-head RMSNorm, with one statistic per head
    b.add("attn.qk_norm.input", bit(ActModule::kQkv), (o.elem_bytes * Dh + o.stat_bytes) * (H + Hkv));
  attention_core_terms(b, c, l, H * Dh, o);
}

// Multi-head latent attention (DeepSeek-V2 section 2.1; DeepSeek-V3 section 2.1.1), in the training form
// that decompresses k and v: c_Q = W_DQ h and c_KV = W_DKV h are normalised (RMSNorm) and up-projected
// to q (H (Dn + Dr)), k (H Dn plus the shared RoPE key broadcast to every head) and v (H Dv). Kept: the
// latents before their norms (with the shared RoPE key) and their statistics; the normalised latents are
// the up-projections' inputs (dropped by "norm"), and q, k, v (dropped by "qkv", recomputed from the
// latents as DeepSeek-V3 3.2.3 does). The latents are computed on the sequence-parallel share of tokens
// and so divided by t like the rest.
void mla_terms(Builder& b, const ModelConfig& c, int64_t l, const ActivationOptions& o) {
  const double H = double(c.n_heads), Dqk = double(c.qk_head_dim()), Dv = double(c.v_head_dim);
  const double Dq = double(c.q_lora_rank), Dc = double(c.kv_lora_rank), Dr = double(c.qk_rope_head_dim);
  rmsnorm_terms(b, "attn_norm.input", "attn_norm.output", double(c.d_model), o);
  if (c.q_lora_rank > 0) rmsnorm_terms(b, "mla.q_latent", "mla.q_latent_norm", Dq, o);
  // c_KV with the RoPE key k^R before RoPE (one W_DKV output of Dc + Dr); the norm covers c_KV only.
  b.add("mla.kv_latent", bit(ActModule::kKept), o.elem_bytes * (Dc + Dr) + o.stat_bytes);
  b.add("mla.kv_latent_norm", bit(ActModule::kNorm), linear_input_bytes(o) * Dc);
  b.add("attn.qkv", bit(ActModule::kQkv), o.elem_bytes * (2 * H * Dqk + H * Dv));
  attention_core_terms(b, c, l, H * Dv, o);
}

// Gated-delta layer (model/delta_block.h; Gated DeltaNet, Yang, Kautz & Hatamizadeh 2025), as a chunked
// GPU kernel (flash-linear-attention) keeps it: q, k, v and the fp32 gates for the recurrence's
// backward, its state at every chunk boundary (Hd Dv Dk fp32 per C tokens; recomputed under "core_attn"),
// the output gate z, the output before its per-head RMSNorm with one statistic per head, and the
// gated output (W_o's input).
void delta_terms(Builder& b, const ModelConfig& c, const ActivationOptions& o) {
  const double Hd = double(c.delta_h()), Dk = double(c.delta_dk()), Dv = double(c.delta_dv());
  const double C = double(std::max<int64_t>(1, std::min(c.delta_chunk, o.seq_len)));
  rmsnorm_terms(b, "attn_norm.input", "attn_norm.output", double(c.d_model), o);
  b.add("delta.qkv", bit(ActModule::kQkv), o.elem_bytes * Hd * (2 * Dk + Dv));
  b.add("delta.gates", bit(ActModule::kKept), o.stat_bytes * 2 * Hd);
  b.add("delta.chunk_states", bit(ActModule::kCoreAttn), o.stat_bytes * Hd * Dv * Dk / C);
  b.add("delta.z", bit(ActModule::kKept), o.elem_bytes * Hd * Dv);
  b.add("delta.output", bit(ActModule::kKept), o.elem_bytes * Hd * Dv + o.stat_bytes * Hd);
  b.add("delta.gated_output", bit(ActModule::kKept), linear_input_bytes(o) * Hd * Dv);
}

void dense_ffn_terms(Builder& b, const ModelConfig& c, const ActivationOptions& o) {
  rmsnorm_terms(b, "mlp_norm.input", "mlp_norm.output", double(c.d_model), o);
  swiglu_terms(b, "mlp.gate_up", "mlp.swiglu", double(c.d_ff), o.elem_bytes, bit(ActModule::kKept), o);
}

void moe_terms(Builder& b, const ModelConfig& c, const ActivationOptions& o) {
  const double D = double(c.d_model), E = double(c.n_experts), K = double(c.top_k), F = double(c.d_expert);
  const double Din = double(c.expert_in_dim()), r = o.rows_per_token;
  rmsnorm_terms(b, "moe_norm.input", "moe_norm.output", D, o);
  // Router (Fedus et al. 2021; Zoph et al. 2022): fp32 logits for the z-loss and the softmax / sigmoid
  // output for its backward.
  b.add("router.logits", bit(ActModule::kKept), o.stat_bytes * E);
  b.add("router.scores", bit(ActModule::kKept), o.stat_bytes * E);
  // Top-k: int32 expert index and fp32 gate per choice, read by combine and the gate gradient.
  b.add("router.topk", bit(ActModule::kKept), (4.0 + o.stat_bytes) * K);
  if (c.d_latent > 0)  // latent MoE: down-projection output normalised before dispatch
    rmsnorm_terms(b, "latent.norm_input", "latent.norm_output", double(c.d_latent), o);
  // Dispatch: each token's row permuted to its expert, r rows per token on the busiest EP rank (capacity
  // slots, padding included, or K x imbalance when dropless): the experts' up-projection input.
  b.add("dispatch.rows", bit(ActModule::kKept), linear_input_bytes(o) * r * Din);
  // Routed experts: SwiGLU per row; DeepSeek-V3 caches the SwiGLU input in FP8 too.
  const double pair_bytes = o.fp8_cache_bytes > 0 ? o.fp8_cache_bytes : o.elem_bytes;
  swiglu_terms(b, "experts.gate_up", "experts.swiglu", r * F, pair_bytes, bit(ActModule::kExperts), o);
  // Expert outputs: the gate gradient of combine is dL/dg = y_e . dy, so each row's output is kept.
  b.add("experts.output", bit(ActModule::kExperts) | bit(ActModule::kExpertOutput), o.elem_bytes * r * Din);
  if (c.d_latent > 0)  // combined latent output: the up-projection's input
    b.add("latent.up_input", bit(ActModule::kKept), linear_input_bytes(o) * double(c.d_latent));
  for (int64_t e = 0; e < c.n_shared_experts; ++e)  // always-on experts on the normalised input
    swiglu_terms(b, "shared.gate_up", "shared.swiglu", F, o.elem_bytes, bit(ActModule::kSharedExperts), o);
  if (c.moe_out_norm) rmsnorm_terms(b, "moe_out_norm.input", nullptr, D, o);
}

}  // namespace

const std::vector<std::string>& recompute_module_names() {
  static const std::vector<std::string> names = {"norm",           "core_attn", "swiglu",       "experts",
                                                  "shared_experts", "qkv",       "expert_output"};
  return names;
}

RecomputeMask recompute_mask(const std::vector<std::string>& names) {
  const auto& all = recompute_module_names();
  RecomputeMask m = kRecomputeNothing;
  for (const std::string& n : names)
    for (size_t i = 0; i < all.size(); ++i)
      if (all[i] == n) m |= RecomputeMask(1u << i);
  return m;
}

std::vector<ActTerm> layer_activation_terms(const ModelConfig& c, int64_t l, const ActivationOptions& o) {
  std::vector<ActTerm> terms;
  Builder b{&terms, double(o.tp)};
  if (c.is_delta(l)) delta_terms(b, c, o);
  else if (c.mla()) mla_terms(b, c, l, o);
  else attention_terms(b, c, l, o);
  if (c.is_moe(l)) moe_terms(b, c, o);
  else dense_ffn_terms(b, c, o);
  return terms;
}

std::vector<ActTerm> mtp_module_terms(const ModelConfig& c, const ActivationOptions& o) {
  std::vector<ActTerm> terms;
  Builder b{&terms, double(o.tp)};
  const double D = double(c.d_model);
  // RMSNorm(h) and RMSNorm(Emb(t_{i+k})), concatenated as the (D, 2D) projection's input.
  b.add("mtp.norm_inputs", bit(ActModule::kKept), 2 * (o.elem_bytes * D + o.stat_bytes));
  b.add("mtp.projection_input", bit(ActModule::kNorm), linear_input_bytes(o) * 2 * D);
  for (ActTerm t : layer_activation_terms(c, c.n_layers - 1, o)) {
    t.op = "mtp." + t.op;
    terms.push_back(t);
  }
  return terms;
}

double activation_bytes_per_token(const std::vector<ActTerm>& terms, RecomputeMask mask) {
  double sum = 0;
  for (const ActTerm& t : terms)
    if ((t.modules & mask) == 0) sum += t.bytes_per_token;
  return sum;
}

double layer_input_bytes_per_token(const ModelConfig& c, const ActivationOptions& o) {
  return o.elem_bytes * double(c.d_model) / double(o.tp);
}

double korthikanti_layer_bytes(double s, double b, double h, double a, double t, KorthikantiCase k) {
  const double sbh = s * b * h, attn = 5.0 * a * s / h;
  switch (k) {
    case KorthikantiCase::kNoParallel: return sbh * (34.0 + attn);                        // eq. (1)
    case KorthikantiCase::kTensor: return sbh * (10.0 + 24.0 / t + attn / t);             // eq. (2)
    case KorthikantiCase::kTensorSequence: return sbh / t * (34.0 + attn);                // eq. (4)
    case KorthikantiCase::kTensorSequenceSelective: return sbh / t * 34.0;                // eq. (5)
    case KorthikantiCase::kFull: return 2.0 * sbh;                                        // section 4.3
  }
  return 0;
}

}  // namespace mt::plan
