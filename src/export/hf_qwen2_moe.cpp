// hf_qwen2_moe.cpp — tensor names, the few value transforms the mapping needs
// (zero attention biases, the shared-expert gate held at sigmoid(0) = 1/2 with
// the shared down projection doubled, S shared experts as one of width S*F),
// and config.json both ways.
#include "export/hf_qwen2_moe.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"

namespace mt {
namespace {

std::string refuse(const std::string& key, const std::string& value, const std::string& why) {
  return fmt::format("{} = {}: {} has no counterpart in {}", key, value, why, kHfArchitecture);
}

const float* at(const ParamLayout& L, const float* params, const std::string& name) {
  const ParamEntry* e = L.find(name);
  MT_CHECK(e != nullptr, "no parameter {}", name);
  return params + e->offset;
}

NamedTensor copy_of(const ParamLayout& L, const float* params, const std::string& name, std::string hf_name) {
  const ParamEntry* e = L.find(name);
  MT_CHECK(e != nullptr, "no parameter {}", name);
  return NamedTensor{std::move(hf_name), e->shape, std::vector<float>(params + e->offset, params + e->offset + e->numel)};
}

std::string layer_type(const ModelConfig& c, int64_t l) {
  return c.is_local(l) ? "sliding_attention" : "full_attention";
}

}  // namespace

Status check_qwen2_moe(const ModelConfig& c) {
  if (c.mla()) return Status::error(refuse("model.attention", "\"mla\"", "multi-head latent attention"));
  if (c.has_delta())
    return Status::error(refuse("model.layer_pattern", "\"" + c.layer_pattern + "\"", "gated-delta (D) layers"));
  if (c.d_latent > 0) return Status::error(refuse("model.d_latent", std::to_string(c.d_latent), "latent MoE"));
  // Said, not dropped silently: the raw export keeps the modules, generation never reads them.
  if (c.mtp_depth > 0)
    return Status::error(refuse("model.mtp_depth", std::to_string(c.mtp_depth),
                                "multi-token prediction (modules used by training only; export with the raw format "
                                "to keep them)"));
  if (c.moe_out_norm) return Status::error(refuse("model.moe_out_norm", "true", "an RMSNorm on the MoE output"));
  if (c.qk_norm) return Status::error(refuse("model.qk_norm", "true", "RMSNorm on queries and keys"));
  if (c.n_experts > 0 && c.router_score == RouterScore::kSigmoid)
    return Status::error(refuse("model.router_score", "\"sigmoid\"", "a sigmoid router (it has softmax)"));
  if (c.n_experts > 0 && c.aux_free_bias)
    return Status::error(refuse("model.aux_free_bias", "true", "a selection bias on the router"));
  if (c.n_kv_heads_local > 0 && c.n_kv_heads_local != c.n_kv_heads)
    return Status::error(refuse("model.n_kv_heads_local", std::to_string(c.n_kv_heads_local),
                                "a kv-head count of sliding-window layers different from n_kv_heads"));
  if (c.d_model % c.n_heads != 0)
    return Status::errorf("model.d_model = {} is not a multiple of model.n_heads = {}", c.d_model, c.n_heads);
  return Status::ok();
}

nlohmann::json qwen2_moe_config(const ModelConfig& c, int64_t max_positions, int64_t bos_eos, const char* torch_dtype) {
  nlohmann::json j;
  j["architectures"] = {kHfArchitecture};
  j["model_type"] = "qwen2_moe";
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.d_model;
  j["num_hidden_layers"] = c.n_layers;
  j["num_attention_heads"] = c.n_heads;
  j["num_key_value_heads"] = c.n_kv_heads;
  j["head_dim"] = c.head_dim();
  j["hidden_act"] = "silu";
  j["rms_norm_eps"] = c.norm_eps;
  j["rope_theta"] = c.rope_theta;
  j["rope_scaling"] = nullptr;
  // Context extension as transformers' rope_type (transformers 5 reads it into rope_parameters).
  if (c.rope_scaling == RopeScalingKind::kLinear)
    j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", c.rope_factor}};
  if (c.rope_scaling == RopeScalingKind::kYarn) {
    j["rope_scaling"] = {{"rope_type", "yarn"},
                         {"factor", c.rope_factor},
                         {"original_max_position_embeddings", c.rope_original_len},
                         {"beta_fast", c.yarn_beta_fast},
                         {"beta_slow", c.yarn_beta_slow}};
    // Given only when set: transformers' default is ours (0.1 ln factor + 1).
    if (c.yarn_attention_factor > 0) j["rope_scaling"]["attention_factor"] = c.yarn_attention_factor;
  }
  j["max_position_embeddings"] = max_positions;
  j["tie_word_embeddings"] = c.tied_embeddings;
  j["attention_dropout"] = 0.0;
  j["qkv_bias"] = true;  // the biases are exported as zeros
  // Sliding windows per layer: layer_types rules; use_sliding_window must be
  // true or newer releases zero sliding_window.
  nlohmann::json types = nlohmann::json::array();
  bool any_local = false;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    types.push_back(layer_type(c, l));
    any_local = any_local || c.is_local(l);
  }
  j["layer_types"] = types;
  j["use_sliding_window"] = any_local;
  j["sliding_window"] = any_local ? nlohmann::json(c.window) : nlohmann::json(nullptr);
  j["max_window_layers"] = c.n_layers;
  // FFN: the first n_dense_layers (all, for a dense model) are Qwen2MoeMLP of
  // intermediate_size; the rest sparse blocks.
  j["intermediate_size"] = c.d_ff;
  nlohmann::json dense = nlohmann::json::array();
  for (int64_t l = 0; l < c.n_layers; ++l)
    if (!c.is_moe(l)) dense.push_back(l);
  j["mlp_only_layers"] = dense;
  j["decoder_sparse_step"] = 1;
  j["num_experts"] = c.n_experts;
  j["num_experts_per_tok"] = c.n_experts > 0 ? c.top_k : 1;
  j["moe_intermediate_size"] = c.d_expert;
  j["shared_expert_intermediate_size"] = c.n_shared_experts * c.d_expert;
  j["norm_topk_prob"] = c.router_renormalize;
  j["output_router_logits"] = false;
  j["router_aux_loss_coef"] = c.aux_loss_coef;
  j["initializer_range"] = c.init_std;
  j["bos_token_id"] = bos_eos;
  j["eos_token_id"] = bos_eos;
  j["torch_dtype"] = torch_dtype;
  j["use_cache"] = true;
  return j;
}

namespace {

template <typename T>
Result<T> get(const nlohmann::json& j, const std::string& key, const std::string& path) {
  if (!j.contains(key)) return Status::errorf("{}: \"{}\" is missing", path, key);
  try {
    return j.at(key).get<T>();
  } catch (const std::exception&) {
    return Status::errorf("{}: \"{}\" has the wrong type ({})", path, key, j.at(key).dump());
  }
}

template <typename T>
T get_or(const nlohmann::json& j, const std::string& key, T fallback) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  try {
    return j.at(key).get<T>();
  } catch (const std::exception&) {
    return fallback;
  }
}

Status unsupported(const std::string& path, const std::string& key, const nlohmann::json& v, const std::string& why) {
  return Status::errorf("{}: \"{}\" = {}: {} has no counterpart in moetrain", path, key, v.dump(), why);
}

}  // namespace

Result<ModelConfig> model_config_from_qwen2_moe(const nlohmann::json& j, const std::string& path,
                                                ModelConfig c) {
  if (!j.is_object()) return Status::errorf("{}: not a JSON object", path);
  const auto arch = j.value("architectures", nlohmann::json::array());
  if (!arch.is_array() || arch.size() != 1 || arch[0] != kHfArchitecture)
    return Status::errorf("{}: \"architectures\" = {}: moetrain imports [\"{}\"] only", path, arch.dump(),
                          kHfArchitecture);
#define MT_GET(var, T, key)              \
  auto var##_r = get<T>(j, key, path);   \
  if (!var##_r) return var##_r.status(); \
  const T var = var##_r.value()
  MT_GET(V, int64_t, "vocab_size");
  MT_GET(D, int64_t, "hidden_size");
  MT_GET(L, int64_t, "num_hidden_layers");
  MT_GET(H, int64_t, "num_attention_heads");
  MT_GET(Fd, int64_t, "intermediate_size");
#undef MT_GET
  const int64_t Hkv = get_or<int64_t>(j, "num_key_value_heads", H);
  if (H <= 0 || D % H != 0) return Status::errorf("{}: hidden_size {} is not a multiple of num_attention_heads {}", path, D, H);
  if (j.contains("head_dim") && !j["head_dim"].is_null() && j["head_dim"] != D / H)
    return unsupported(path, "head_dim", j["head_dim"], "a head dim other than hidden_size / num_attention_heads");
  if (get_or<std::string>(j, "hidden_act", "silu") != "silu")
    return unsupported(path, "hidden_act", j["hidden_act"], "an activation other than SwiGLU's silu");
  for (const char* k : {"rope_scaling", "rope_parameters"}) {
    if (!j.contains(k) || j[k].is_null()) continue;
    const auto& r = j[k];
    const std::string type = r.is_object() ? r.value("rope_type", r.value("type", "default")) : "?";
    if (type != "default" && type != "linear" && type != "yarn")
      return unsupported(path, k, r, "RoPE scaling other than linear and yarn");
    if (r.contains("rope_theta")) c.rope_theta = r["rope_theta"].get<double>();
    if (type == "default") continue;
    c.rope_scaling = type == "yarn" ? RopeScalingKind::kYarn : RopeScalingKind::kLinear;
    c.rope_factor = get_or<double>(r, "factor", 1.0);
    if (type == "yarn") {
      if (r.contains("mscale") || r.contains("mscale_all_dim"))
        return unsupported(path, k, r, "yarn's mscale / mscale_all_dim (DeepSeek's attention factor)");
      c.rope_original_len = get_or<int64_t>(r, "original_max_position_embeddings", 0);
      c.yarn_beta_fast = get_or<double>(r, "beta_fast", 32.0);
      c.yarn_beta_slow = get_or<double>(r, "beta_slow", 1.0);
      c.yarn_attention_factor = r.contains("attention_factor") && !r["attention_factor"].is_null()
                                    ? r["attention_factor"].get<double>()
                                    : 0.0;
      if (r.value("truncate", true) != true) return unsupported(path, k, r, "yarn without truncate");
    }
  }
  c.vocab_size = V;
  c.d_model = D;
  c.n_layers = L;
  c.n_heads = H;
  c.n_kv_heads = Hkv;
  c.n_kv_heads_local = 0;
  c.d_ff = Fd;
  c.norm_eps = get_or<double>(j, "rms_norm_eps", 1e-6);
  c.rope_theta = get_or<double>(j, "rope_theta", c.rope_theta);
  c.tied_embeddings = get_or<bool>(j, "tie_word_embeddings", false);
  c.qk_norm = false;
  c.d_latent = 0;
  c.moe_out_norm = false;
  c.aux_free_bias = false;
  c.router_score = RouterScore::kSoftmax;

  // Attention kinds per layer, as the smallest repeating L/G pattern.
  std::string kinds;
  const bool sliding = get_or<bool>(j, "use_sliding_window", false);
  if (j.contains("layer_types") && j["layer_types"].is_array()) {
    if (int64_t(j["layer_types"].size()) != L)
      return Status::errorf("{}: \"layer_types\" has {} entries for {} layers", path, j["layer_types"].size(), L);
    for (const auto& t : j["layer_types"]) {
      if (t == "sliding_attention") kinds += sliding ? 'L' : 'G';
      else if (t == "full_attention") kinds += 'G';
      else return unsupported(path, "layer_types", t, "an attention kind other than full and sliding");
    }
  } else {
    // Older configs: sliding window on the layers below max_window_layers.
    const int64_t below = get_or<int64_t>(j, "max_window_layers", L);
    for (int64_t l = 0; l < L; ++l) kinds += sliding && l < below ? 'L' : 'G';
  }
  if (kinds.find('L') != std::string::npos) {
    auto w = get<int64_t>(j, "sliding_window", path);
    if (!w) return w.status();
    c.window = w.value();
  }
  size_t period = 1;
  while (period < kinds.size()) {
    bool ok = true;
    for (size_t i = 0; i < kinds.size() && ok; ++i) ok = kinds[i] == kinds[i % period];
    if (ok) break;
    ++period;
  }
  const std::string pattern = kinds.substr(0, period);
  bool same = true;  // keep base's own spelling of the same pattern ("LGLG" for "LG")
  for (int64_t l = 0; l < L && same; ++l) same = c.is_local(l) == (kinds[size_t(l)] == 'L');
  if (!same) c.layer_pattern = pattern;

  // FFN kinds: dense on mlp_only_layers, which must be the first layers.
  const int64_t E = get_or<int64_t>(j, "num_experts", 0);
  const int64_t step = get_or<int64_t>(j, "decoder_sparse_step", 1);
  std::vector<int64_t> dense = get_or<std::vector<int64_t>>(j, "mlp_only_layers", {});
  std::sort(dense.begin(), dense.end());
  for (size_t i = 0; i < dense.size(); ++i)
    if (dense[i] != int64_t(i))
      return unsupported(path, "mlp_only_layers", j["mlp_only_layers"],
                         "dense layers other than the first ones (model.n_dense_layers)");
  if (E > 0 && step != 1 && int64_t(dense.size()) < L)
    return unsupported(path, "decoder_sparse_step", j["decoder_sparse_step"], "MoE on every n-th layer only");
  c.n_experts = int64_t(dense.size()) >= L ? 0 : E;
  c.n_dense_layers = c.n_experts > 0 ? int64_t(dense.size()) : 0;
  if (c.n_experts > 0) {
    auto k = get<int64_t>(j, "num_experts_per_tok", path);
    auto f = get<int64_t>(j, "moe_intermediate_size", path);
    if (!k) return k.status();
    if (!f) return f.status();
    c.top_k = k.value();
    c.d_expert = f.value();
    c.router_renormalize = get_or<bool>(j, "norm_topk_prob", false);
    const int64_t shared = get_or<int64_t>(j, "shared_expert_intermediate_size", 0);
    if (shared % c.d_expert != 0)
      return unsupported(path, "shared_expert_intermediate_size", j["shared_expert_intermediate_size"],
                         "a shared expert whose width is not a multiple of moe_intermediate_size");
    c.n_shared_experts = shared / c.d_expert;
  } else {
    c.n_shared_experts = 0;
  }
  return c;
}

// ---- tensors ----

std::vector<NamedTensor> to_qwen2_moe(const ModelConfig& c, const ParamLayout& L, const float* p) {
  std::vector<NamedTensor> out;
  const int64_t D = c.d_model, Dh = c.head_dim();
  out.push_back(copy_of(L, p, "embed", "model.embed_tokens.weight"));
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string m = "layers." + std::to_string(l), h = "model.layers." + std::to_string(l);
    const int64_t Hkv = c.kv_heads(l);
    out.push_back(copy_of(L, p, m + ".attn_norm", h + ".input_layernorm.weight"));
    out.push_back(copy_of(L, p, m + ".attn.wq", h + ".self_attn.q_proj.weight"));
    out.push_back(copy_of(L, p, m + ".attn.wk", h + ".self_attn.k_proj.weight"));
    out.push_back(copy_of(L, p, m + ".attn.wv", h + ".self_attn.v_proj.weight"));
    out.push_back(copy_of(L, p, m + ".attn.wo", h + ".self_attn.o_proj.weight"));
    // Qwen2 attention always has q/k/v biases: zeros add exactly nothing.
    out.push_back({h + ".self_attn.q_proj.bias", {c.n_heads * Dh}, std::vector<float>(size_t(c.n_heads * Dh), 0.0f)});
    out.push_back({h + ".self_attn.k_proj.bias", {Hkv * Dh}, std::vector<float>(size_t(Hkv * Dh), 0.0f)});
    out.push_back({h + ".self_attn.v_proj.bias", {Hkv * Dh}, std::vector<float>(size_t(Hkv * Dh), 0.0f)});
    out.push_back(copy_of(L, p, m + ".ffn_norm", h + ".post_attention_layernorm.weight"));
    if (!c.is_moe(l)) {
      out.push_back(copy_of(L, p, m + ".mlp.w1", h + ".mlp.gate_proj.weight"));
      out.push_back(copy_of(L, p, m + ".mlp.w3", h + ".mlp.up_proj.weight"));
      out.push_back(copy_of(L, p, m + ".mlp.w2", h + ".mlp.down_proj.weight"));
      continue;
    }
    out.push_back(copy_of(L, p, m + ".moe.router", h + ".mlp.gate.weight"));
    for (int64_t e = 0; e < c.n_experts; ++e) {
      const std::string me = m + ".moe.experts." + std::to_string(e), he = h + ".mlp.experts." + std::to_string(e);
      out.push_back(copy_of(L, p, me + ".w1", he + ".gate_proj.weight"));
      out.push_back(copy_of(L, p, me + ".w3", he + ".up_proj.weight"));
      out.push_back(copy_of(L, p, me + ".w2", he + ".down_proj.weight"));
    }
    // The S shared experts as one of width S*F: sum_s W2_s z_s = [W2_0 .. W2_S-1] [z_0; ..; z_S-1].
    // Its output is scaled by sigmoid(shared_expert_gate . x); a zero gate
    // gives exactly 1/2, so the down projection is stored doubled (exact: a
    // power-of-two scale) and the product is the shared experts' sum.
    const int64_t S = c.n_shared_experts, F = c.d_expert;
    NamedTensor g{h + ".mlp.shared_expert.gate_proj.weight", {S * F, D}, {}};
    NamedTensor u{h + ".mlp.shared_expert.up_proj.weight", {S * F, D}, {}};
    NamedTensor d{h + ".mlp.shared_expert.down_proj.weight", {D, S * F}, std::vector<float>(size_t(D * S * F))};
    for (int64_t s = 0; s < S; ++s) {
      const std::string ms = m + ".moe.shared." + std::to_string(s);
      const float* w1 = at(L, p, ms + ".w1");
      const float* w3 = at(L, p, ms + ".w3");
      const float* w2 = at(L, p, ms + ".w2");
      g.data.insert(g.data.end(), w1, w1 + F * D);
      u.data.insert(u.data.end(), w3, w3 + F * D);
      for (int64_t r = 0; r < D; ++r)
        for (int64_t k = 0; k < F; ++k) d.data[size_t(r * S * F + s * F + k)] = 2.0f * w2[r * F + k];
    }
    out.push_back(std::move(g));
    out.push_back(std::move(u));
    out.push_back(std::move(d));
    out.push_back({h + ".mlp.shared_expert_gate.weight", {1, D}, std::vector<float>(size_t(D), 0.0f)});
  }
  out.push_back(copy_of(L, p, "final_norm", "model.norm.weight"));
  if (!c.tied_embeddings) out.push_back(copy_of(L, p, "head", "lm_head.weight"));
  return out;
}

namespace {

Result<const NamedTensor*> find_hf(const std::map<std::string, NamedTensor>& hf, const std::string& name,
                                   const std::vector<int64_t>& shape) {
  auto it = hf.find(name);
  if (it == hf.end()) return Status::errorf("tensor {} is missing", name);
  if (it->second.shape != shape) {
    std::string want, got;
    for (int64_t v : shape) want += (want.empty() ? "" : ", ") + std::to_string(v);
    for (int64_t v : it->second.shape) got += (got.empty() ? "" : ", ") + std::to_string(v);
    return Status::errorf("tensor {} has shape [{}], expected [{}]", name, got, want);
  }
  return &it->second;
}

Status take(const ParamLayout& L, float* p, const std::map<std::string, NamedTensor>& hf, const std::string& ours,
            const std::string& theirs) {
  const ParamEntry* e = L.find(ours);
  MT_CHECK(e != nullptr, "no parameter {}", ours);
  auto t = find_hf(hf, theirs, e->shape);
  if (!t) return t.status();
  std::memcpy(p + e->offset, t.value()->data.data(), size_t(e->numel) * sizeof(float));
  return Status::ok();
}

Status require_zero(const std::map<std::string, NamedTensor>& hf, const std::string& name,
                    const std::vector<int64_t>& shape, const std::string& why) {
  auto it = hf.find(name);
  if (it == hf.end()) return Status::ok();  // absent: zero
  if (it->second.shape != shape) return find_hf(hf, name, shape).status();
  for (float v : it->second.data)
    if (v != 0.0f) return Status::errorf("tensor {} is not zero: {} has no counterpart in moetrain", name, why);
  return Status::ok();
}

}  // namespace

Status from_qwen2_moe(const ModelConfig& c, const ParamLayout& L, const std::map<std::string, NamedTensor>& hf,
                      float* p) {
  const int64_t D = c.d_model, Dh = c.head_dim();
  MT_RETURN_IF_ERROR(take(L, p, hf, "embed", "model.embed_tokens.weight"));
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string m = "layers." + std::to_string(l), h = "model.layers." + std::to_string(l);
    const int64_t Hkv = c.kv_heads(l);
    MT_RETURN_IF_ERROR(take(L, p, hf, m + ".attn_norm", h + ".input_layernorm.weight"));
    MT_RETURN_IF_ERROR(take(L, p, hf, m + ".attn.wq", h + ".self_attn.q_proj.weight"));
    MT_RETURN_IF_ERROR(take(L, p, hf, m + ".attn.wk", h + ".self_attn.k_proj.weight"));
    MT_RETURN_IF_ERROR(take(L, p, hf, m + ".attn.wv", h + ".self_attn.v_proj.weight"));
    MT_RETURN_IF_ERROR(take(L, p, hf, m + ".attn.wo", h + ".self_attn.o_proj.weight"));
    MT_RETURN_IF_ERROR(require_zero(hf, h + ".self_attn.q_proj.bias", {c.n_heads * Dh}, "an attention bias"));
    MT_RETURN_IF_ERROR(require_zero(hf, h + ".self_attn.k_proj.bias", {Hkv * Dh}, "an attention bias"));
    MT_RETURN_IF_ERROR(require_zero(hf, h + ".self_attn.v_proj.bias", {Hkv * Dh}, "an attention bias"));
    MT_RETURN_IF_ERROR(take(L, p, hf, m + ".ffn_norm", h + ".post_attention_layernorm.weight"));
    if (!c.is_moe(l)) {
      MT_RETURN_IF_ERROR(take(L, p, hf, m + ".mlp.w1", h + ".mlp.gate_proj.weight"));
      MT_RETURN_IF_ERROR(take(L, p, hf, m + ".mlp.w3", h + ".mlp.up_proj.weight"));
      MT_RETURN_IF_ERROR(take(L, p, hf, m + ".mlp.w2", h + ".mlp.down_proj.weight"));
      continue;
    }
    MT_RETURN_IF_ERROR(take(L, p, hf, m + ".moe.router", h + ".mlp.gate.weight"));
    for (int64_t e = 0; e < c.n_experts; ++e) {
      const std::string me = m + ".moe.experts." + std::to_string(e), he = h + ".mlp.experts." + std::to_string(e);
      MT_RETURN_IF_ERROR(take(L, p, hf, me + ".w1", he + ".gate_proj.weight"));
      MT_RETURN_IF_ERROR(take(L, p, hf, me + ".w3", he + ".up_proj.weight"));
      MT_RETURN_IF_ERROR(take(L, p, hf, me + ".w2", he + ".down_proj.weight"));
    }
    const int64_t S = c.n_shared_experts, F = c.d_expert;
    if (S == 0) continue;
    MT_RETURN_IF_ERROR(require_zero(hf, h + ".mlp.shared_expert_gate.weight", {1, D},
                                    "a shared-expert gate other than the constant sigmoid(0) = 1/2"));
    auto g = find_hf(hf, h + ".mlp.shared_expert.gate_proj.weight", {S * F, D});
    auto u = find_hf(hf, h + ".mlp.shared_expert.up_proj.weight", {S * F, D});
    auto d = find_hf(hf, h + ".mlp.shared_expert.down_proj.weight", {D, S * F});
    for (const auto* r : {&g, &u, &d})
      if (!*r) return r->status();
    for (int64_t s = 0; s < S; ++s) {
      const std::string ms = m + ".moe.shared." + std::to_string(s);
      float* w1 = p + L.find(ms + ".w1")->offset;
      float* w3 = p + L.find(ms + ".w3")->offset;
      float* w2 = p + L.find(ms + ".w2")->offset;
      std::memcpy(w1, g.value()->data.data() + s * F * D, size_t(F * D) * sizeof(float));
      std::memcpy(w3, u.value()->data.data() + s * F * D, size_t(F * D) * sizeof(float));
      for (int64_t r = 0; r < D; ++r)
        for (int64_t k = 0; k < F; ++k) w2[r * F + k] = 0.5f * d.value()->data[size_t(r * S * F + s * F + k)];
    }
  }
  MT_RETURN_IF_ERROR(take(L, p, hf, "final_norm", "model.norm.weight"));
  if (!c.tied_embeddings) MT_RETURN_IF_ERROR(take(L, p, hf, "head", "lm_head.weight"));
  return Status::ok();
}

}  // namespace mt
