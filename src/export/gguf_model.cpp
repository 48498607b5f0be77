// gguf_model.cpp — tensor names, layouts and hyperparameter keys of the
// glm4moe and deepseek2 mappings (llama.cpp's src/models/glm4-moe.cpp and
// deepseek2.cpp define what they read).
#include "export/gguf_model.h"

#include <fmt/format.h>

#include "core/check.h"
#include "export/gguf_tokenizer.h"
#include "train/inference_model.h"

namespace mt {
namespace {

std::string refuse(const std::string& key, const std::string& value, const std::string& why, GgufArch a) {
  return fmt::format("{} = {}: llama.cpp's {} has no {}", key, value, gguf_arch_name(a), why);
}

class Builder {
 public:
  Builder(const InferenceModel& m, GgmlType type) : m_(m), c_(m.cfg.model), type_(type) {}

  const std::vector<float>& p(const std::string& name) {
    const ParamEntry* e = m_.layout.find(name);
    MT_CHECK(e != nullptr, "no parameter {}", name);
    scratch_.assign(m_.params.begin() + e->offset, m_.params.begin() + e->offset + e->numel);
    return scratch_;
  }
  std::vector<int64_t> shape(const std::string& name) const { return m_.layout.find(name)->shape; }

  // A matrix or stack of matrices, stored as the export's type.
  void matrix(const std::string& name, std::vector<int64_t> shape, std::vector<float> data) {
    GgmlType t = type_;
    if (t == GgmlType::kQ8_0 && shape.back() % 32 != 0) t = GgmlType::kF32;
    out_.push_back({name, std::move(shape), t, std::move(data)});
  }
  // Norms, the router, biases: F32 always.
  void f32(const std::string& name, std::vector<int64_t> shape, std::vector<float> data) {
    out_.push_back({name, std::move(shape), GgmlType::kF32, std::move(data)});
  }
  void copy_matrix(const std::string& gguf, const std::string& ours) { matrix(gguf, shape(ours), p(ours)); }
  void copy_f32(const std::string& gguf, const std::string& ours) { f32(gguf, shape(ours), p(ours)); }

  // Moetrain's rotate-half pairs (x[i], x[i + half]) of `rows` consecutive
  // rows starting at `first`, reordered to interleaved pairs (x[2i], x[2i+1])
  // (ggml's "norm" RoPE): a permutation of output rows of a matrix with
  // `cols` columns.
  static void interleave_rope_rows(std::vector<float>& w, int64_t first, int64_t rows, int64_t cols) {
    const int64_t half = rows / 2;
    std::vector<float> old(w.begin() + first * cols, w.begin() + (first + rows) * cols);
    for (int64_t i = 0; i < half; ++i) {
      std::copy_n(old.begin() + i * cols, cols, w.begin() + (first + 2 * i) * cols);
      std::copy_n(old.begin() + (i + half) * cols, cols, w.begin() + (first + 2 * i + 1) * cols);
    }
  }

  void ffn(const std::string& blk, const std::string& pre, int64_t l, int64_t moe_index) {
    if (!c_.is_moe(l)) {
      copy_matrix(blk + ".ffn_gate.weight", pre + ".mlp.w1");
      copy_matrix(blk + ".ffn_up.weight", pre + ".mlp.w3");
      copy_matrix(blk + ".ffn_down.weight", pre + ".mlp.w2");
      return;
    }
    const int64_t E = c_.n_experts, F = c_.d_expert, D = c_.d_model, S = c_.n_shared_experts;
    copy_f32(blk + ".ffn_gate_inp.weight", pre + ".moe.router");
    std::vector<float> bias(size_t(E), 0.0f);
    if (!m_.router_bias.empty()) std::copy_n(m_.router_bias.begin() + moe_index * E, E, bias.begin());
    if (c_.aux_free_bias || always_bias_) f32(blk + ".exp_probs_b.bias", {E}, bias);
    for (const char* w : {"w1", "w3", "w2"}) {
      std::vector<float> stack;
      for (int64_t e = 0; e < E; ++e) {
        const std::vector<float>& x = p(fmt::format("{}.moe.experts.{}.{}", pre, e, w));
        stack.insert(stack.end(), x.begin(), x.end());
      }
      const bool down = std::string(w) == "w2";
      const char* name = down                     ? ".ffn_down_exps.weight"
                         : std::string(w) == "w1" ? ".ffn_gate_exps.weight"
                                                  : ".ffn_up_exps.weight";
      matrix(blk + name, down ? std::vector<int64_t>{E, D, F} : std::vector<int64_t>{E, F, D}, std::move(stack));
    }
    // S shared experts as one of width S * F: their hidden units side by side.
    std::vector<float> gate, up, down(size_t(D * S * F));
    for (int64_t s = 0; s < S; ++s) {
      const std::string e = fmt::format("{}.moe.shared.{}", pre, s);
      const std::vector<float>& g = p(e + ".w1");
      gate.insert(gate.end(), g.begin(), g.end());
      const std::vector<float>& u = p(e + ".w3");
      up.insert(up.end(), u.begin(), u.end());
      const std::vector<float>& d = p(e + ".w2");  // (D, F)
      for (int64_t r = 0; r < D; ++r) std::copy_n(d.begin() + r * F, F, down.begin() + r * S * F + s * F);
    }
    matrix(blk + ".ffn_gate_shexp.weight", {S * F, D}, std::move(gate));
    matrix(blk + ".ffn_up_shexp.weight", {S * F, D}, std::move(up));
    matrix(blk + ".ffn_down_shexp.weight", {D, S * F}, std::move(down));
  }

  void gqa_attention(const std::string& blk, const std::string& pre) {
    copy_matrix(blk + ".attn_q.weight", pre + ".attn.wq");
    copy_matrix(blk + ".attn_k.weight", pre + ".attn.wk");
    copy_matrix(blk + ".attn_v.weight", pre + ".attn.wv");
    copy_matrix(blk + ".attn_output.weight", pre + ".attn.wo");
    if (c_.qk_norm) {
      copy_f32(blk + ".attn_q_norm.weight", pre + ".attn.q_norm");
      copy_f32(blk + ".attn_k_norm.weight", pre + ".attn.k_norm");
    }
  }

  void mla_attention(const std::string& blk, const std::string& pre) {
    const int64_t H = c_.n_heads, D = c_.d_model, Dq = c_.q_lora_rank, Dc = c_.kv_lora_rank;
    const int64_t Dn = c_.qk_nope_head_dim, Dr = c_.qk_rope_head_dim, Dv = c_.v_head_dim;
    // Queries: each head's rows are [nope (Dn) | rope (Dr)].
    const std::string q = Dq > 0 ? pre + ".attn.wuq" : pre + ".attn.wq";
    std::vector<float> wq = p(q);
    const int64_t q_cols = Dq > 0 ? Dq : D;
    for (int64_t h = 0; h < H; ++h) interleave_rope_rows(wq, h * (Dn + Dr) + Dn, Dr, q_cols);
    if (Dq > 0) {
      copy_matrix(blk + ".attn_q_a.weight", pre + ".attn.wdq");
      copy_f32(blk + ".attn_q_a_norm.weight", pre + ".attn.q_latent_norm");
      matrix(blk + ".attn_q_b.weight", {H * (Dn + Dr), Dq}, std::move(wq));
    } else {
      matrix(blk + ".attn_q.weight", {H * (Dn + Dr), D}, std::move(wq));
    }
    // kv_a_mqa: the latent's rows, then the shared RoPE key's.
    std::vector<float> kv_a = p(pre + ".attn.wdkv");
    std::vector<float> kr = p(pre + ".attn.wkr");
    interleave_rope_rows(kr, 0, Dr, D);
    kv_a.insert(kv_a.end(), kr.begin(), kr.end());
    matrix(blk + ".attn_kv_a_mqa.weight", {Dc + Dr, D}, std::move(kv_a));
    copy_f32(blk + ".attn_kv_a_norm.weight", pre + ".attn.kv_latent_norm");
    // kv_b: per head its key rows (Dn), then its value rows (Dv).
    const std::vector<float> uk = p(pre + ".attn.wuk");
    const std::vector<float> uv = p(pre + ".attn.wuv");
    std::vector<float> kv_b;
    for (int64_t h = 0; h < H; ++h) {
      kv_b.insert(kv_b.end(), uk.begin() + h * Dn * Dc, uk.begin() + (h + 1) * Dn * Dc);
      kv_b.insert(kv_b.end(), uv.begin() + h * Dv * Dc, uv.begin() + (h + 1) * Dv * Dc);
    }
    matrix(blk + ".attn_kv_b.weight", {H * (Dn + Dv), Dc}, std::move(kv_b));
    copy_matrix(blk + ".attn_output.weight", pre + ".attn.wo");
  }

  std::vector<GgufTensor> build(GgufArch arch) {
    always_bias_ = arch == GgufArch::kGlm4Moe;  // glm4moe requires exp_probs_b: zeros add nothing
    copy_matrix("token_embd.weight", "embed");
    copy_f32("output_norm.weight", "final_norm");
    if (!c_.tied_embeddings) copy_matrix("output.weight", "head");
    int64_t moe_index = 0;
    for (int64_t l = 0; l < c_.n_layers; ++l) {
      const std::string blk = fmt::format("blk.{}", l), pre = fmt::format("layers.{}", l);
      copy_f32(blk + ".attn_norm.weight", pre + ".attn_norm");
      if (arch == GgufArch::kDeepseek2) {
        mla_attention(blk, pre);
        copy_f32(blk + ".ffn_norm.weight", pre + ".ffn_norm");
      } else {
        gqa_attention(blk, pre);
        copy_f32(blk + ".post_attention_norm.weight", pre + ".ffn_norm");
      }
      ffn(blk, pre, l, moe_index);
      moe_index += c_.is_moe(l) ? 1 : 0;
    }
    return std::move(out_);
  }

 private:
  const InferenceModel& m_;
  const ModelConfig& c_;
  GgmlType type_;
  bool always_bias_ = false;
  std::vector<float> scratch_;
  std::vector<GgufTensor> out_;
};

}  // namespace

const char* gguf_arch_name(GgufArch a) { return a == GgufArch::kDeepseek2 ? "deepseek2" : "glm4moe"; }

Result<GgufArch> gguf_arch_for(const ModelConfig& c) {
  const GgufArch a = c.mla() ? GgufArch::kDeepseek2 : GgufArch::kGlm4Moe;
  const std::string pattern = "\"" + c.layer_pattern + "\"";
  if (c.has_delta()) return Status::error(refuse("model.layer_pattern", pattern, "gated-delta (D) layers", a));
  for (int64_t l = 0; l < c.n_layers; ++l)
    if (c.is_local(l)) return Status::error(refuse("model.layer_pattern", pattern, "sliding-window (L) layers", a));
  if (c.n_experts == 0)
    return Status::error(
        refuse("model.n_experts", "0", "dense model (it runs MoE layers after any leading dense ones)", a));
  if (c.n_shared_experts == 0)
    return Status::error(refuse("model.n_shared_experts", "0", "MoE block without a shared expert", a));
  if (c.d_latent > 0) return Status::error(refuse("model.d_latent", std::to_string(c.d_latent), "latent MoE", a));
  if (c.moe_out_norm) return Status::error(refuse("model.moe_out_norm", "true", "RMSNorm on the MoE output", a));
  if (c.mtp_depth > 0)
    return Status::error(
        refuse("model.mtp_depth", std::to_string(c.mtp_depth),
               "place for moetrain's multi-token-prediction modules (export with the hf format to keep them)", a));
  // deepseek2 scales its attention logits by (1 + 0.1 ln f)^2 under any RoPE scaling factor f.
  if (a == GgufArch::kDeepseek2 && c.rope_scaling != RopeScalingKind::kNone)
    return Status::error(refuse("model.rope_scaling",
                                c.rope_scaling == RopeScalingKind::kLinear ? "\"linear\"" : "\"yarn\"",
                                "RoPE scaling without its attention factor (it scales the logits by (1 + 0.1 ln "
                                "factor)^2)",
                                a));
  // llama.cpp takes a 26- or 27-layer (or 48-layer, 128256-token) deepseek2 for DeepSeek-V2-Lite: no query latent.
  if (a == GgufArch::kDeepseek2 && c.q_lora_rank > 0 &&
      (c.n_layers == 26 || c.n_layers == 27 || (c.n_layers == 48 && c.vocab_size == 128256)))
    return Status::error(refuse("model.n_layers", std::to_string(c.n_layers),
                                "query latent at this depth (it reads such a model as DeepSeek-V2-Lite, "
                                "model.q_lora_rank = 0)",
                                a));
  if (c.rope_scaling == RopeScalingKind::kYarn)
    return Status::error(refuse(
        "model.rope_scaling", "\"yarn\"",
        "YaRN computed as moetrain computes it (position interpolation, rope_scaling = \"linear\", is exported)", a));
  if (c.router_force_balance)
    return Status::error(refuse("model.router_force_balance", "true", "random routing (a benchmark setting)", a));
  if (c.expert_groups > 0 && c.max_groups_per_token > 0)
    return Status::error(refuse("model.expert_groups", std::to_string(c.expert_groups),
                                "meaning for group-limited routing, which the trainer does not implement", a));
  if (c.d_model % c.n_heads != 0)
    return Status::errorf("model.d_model = {} is not a multiple of model.n_heads = {}", c.d_model, c.n_heads);
  return a;
}

Result<GgufFile> to_gguf(const InferenceModel& m, const TextCodec& codec, GgmlType type) {
  const ModelConfig& c = m.cfg.model;
  auto arch = gguf_arch_for(c);
  if (!arch) return arch.status();
  const std::string a = gguf_arch_name(arch.value());
  GgufFile f;
  auto kv = [&](const std::string& key, GgufValue v) { f.metadata.push_back({key, std::move(v)}); };
  auto u32 = [](int64_t v) { return uint32_t(v); };
  kv("general.architecture", a);
  kv("general.name", std::string("moetrain"));
  kv("general.file_type", u32(type == GgmlType::kF32    ? 0
                              : type == GgmlType::kF16  ? 1
                              : type == GgmlType::kQ8_0 ? 7
                                                        : 32));
  kv("general.quantization_version", u32(2));
  kv(a + ".vocab_size", u32(c.vocab_size));
  kv(a + ".context_length", u32(m.cfg.train.seq_len));
  kv(a + ".embedding_length", u32(c.d_model));
  kv(a + ".block_count", u32(c.n_layers));
  kv(a + ".feed_forward_length", u32(c.d_ff));
  kv(a + ".attention.head_count", u32(c.n_heads));
  kv(a + ".attention.layer_norm_rms_epsilon", float(c.norm_eps));
  kv(a + ".rope.freq_base", float(c.rope_theta));
  if (c.rope_scaling == RopeScalingKind::kLinear) {
    kv(a + ".rope.scaling.type", std::string("linear"));
    kv(a + ".rope.scaling.factor", float(c.rope_factor));
  }
  kv(a + ".expert_count", u32(c.n_experts));
  kv(a + ".expert_used_count", u32(c.top_k));
  kv(a + ".expert_feed_forward_length", u32(c.d_expert));
  kv(a + ".expert_shared_count", u32(c.n_shared_experts));
  kv(a + ".leading_dense_block_count", u32(c.n_dense_layers));
  kv(a + ".expert_weights_scale", 1.0f);
  kv(a + ".expert_weights_norm", c.router_renormalize);
  kv(a + ".expert_gating_func", u32(c.router_score == RouterScore::kSigmoid ? 2 : 1));
  if (arch.value() == GgufArch::kDeepseek2) {
    kv(a + ".attention.head_count_kv", u32(c.n_heads));
    kv(a + ".attention.key_length", u32(c.qk_nope_head_dim + c.qk_rope_head_dim));
    kv(a + ".attention.value_length", u32(c.v_head_dim));
    kv(a + ".attention.q_lora_rank", u32(c.q_lora_rank));
    kv(a + ".attention.kv_lora_rank", u32(c.kv_lora_rank));
    kv(a + ".rope.dimension_count", u32(c.qk_rope_head_dim));
  } else {
    kv(a + ".attention.head_count_kv", u32(c.n_kv_heads));
    kv(a + ".attention.key_length", u32(c.head_dim()));
    kv(a + ".attention.value_length", u32(c.head_dim()));
    kv(a + ".rope.dimension_count", u32(c.head_dim()));
  }
  add_gguf_tokenizer(f, codec, c.vocab_size);
  f.tensors = Builder(m, type).build(arch.value());
  return f;
}

}  // namespace mt
