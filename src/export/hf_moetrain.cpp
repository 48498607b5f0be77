// hf_moetrain.cpp — config.json and tensor names of the custom-code export,
// both ways. The model math lives in hf_code/modeling_moetrain.py.
#include "export/hf_moetrain.h"

#include <fmt/format.h>

#include <cstring>
#include <set>
#include <toml++/toml.h>

#include "core/check.h"
#include "core/config_schema.h"
#include "core/toml_document.h"

namespace mt {
namespace {

// The MoE units (layers, then MTP modules) in router_bias order, by their export prefix.
std::vector<std::string> moe_unit_prefixes(const ModelConfig& c) {
  std::vector<std::string> out;
  for (int64_t u = 0; u < c.n_units(); ++u)
    if (c.is_moe(u))
      out.push_back(u < c.n_layers ? fmt::format("model.layers.{}.moe", u)
                                   : fmt::format("model.mtp.{}.moe", u - c.n_layers));
  return out;
}

nlohmann::json toml_to_json(const toml::node& n) {
  if (auto v = n.as_integer()) return v->get();
  if (auto v = n.as_floating_point()) return v->get();
  if (auto v = n.as_boolean()) return v->get();
  if (auto v = n.as_string()) return v->get();
  if (auto a = n.as_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const toml::node& e : *a) out.push_back(toml_to_json(e));
    return out;
  }
  MT_CHECK(false, "a [model] key of a type JSON export does not handle");
  return nullptr;
}

Result<std::string> json_to_toml_value(const nlohmann::json& v, const std::string& key, const std::string& at) {
  if (v.is_boolean()) return std::string(v.get<bool>() ? "true" : "false");
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_float()) return toml_double(v.get<double>());
  if (v.is_string()) return toml_quote(v.get<std::string>());
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) {
      auto e = json_to_toml_value(v[i], key, at);
      if (!e) return e.status();
      out += (i ? ", " : "") + e.value();
    }
    return out + "]";
  }
  return Status::errorf("{}: \"{}\" = {}: not a value a [model] key takes", at, key, v.dump());
}

}  // namespace

Status check_moetrain_hf(const ModelConfig& c) {
  if (c.n_experts > 0 && c.router_force_balance)
    return Status::error(
        "model.router_force_balance = true: routing on random logits (a benchmark setting) has no counterpart in "
        "the exported model, which routes on the router's scores");
  if (c.n_experts > 0 && c.expert_groups > 0 && c.max_groups_per_token > 0)
    return Status::errorf(
        "model.expert_groups = {}: group-limited routing is not implemented by the trainer, so the export cannot "
        "say what the model computes",
        c.expert_groups);
  if (c.d_model % c.n_heads != 0)
    return Status::errorf("model.d_model = {} is not a multiple of model.n_heads = {}", c.d_model, c.n_heads);
  return Status::ok();
}

nlohmann::json moetrain_hf_config(const ModelConfig& c, int64_t max_positions, int64_t bos_eos,
                                  const char* torch_dtype) {
  ConfigSchema schema("model config");
  ModelConfig copy = c;
  declare_keys(schema, copy);
  auto doc = parse_toml_document(schema.to_toml(), "model config");
  MT_CHECK(bool(doc), "canonical [model] TOML does not parse: {}", doc.status().message());
  nlohmann::json model = nlohmann::json::object();
  const toml::table* t = doc.value()["model"].as_table();
  MT_CHECK(t != nullptr, "canonical TOML has no [model] table");
  for (const auto& [k, v] : *t) model[std::string(k.str())] = toml_to_json(v);

  nlohmann::json j;
  j["architectures"] = {kHfCustomArchitecture};
  j["model_type"] = "moetrain";
  j["auto_map"] = {{"AutoConfig", "configuration_moetrain.MoetrainConfig"},
                   {"AutoModel", "modeling_moetrain.MoetrainModel"},
                   {"AutoModelForCausalLM", "modeling_moetrain.MoetrainForCausalLM"}};
  j["moetrain_code_version"] = kHfCodeVersion;
  j["moetrain_model"] = model;
  j["max_position_embeddings"] = max_positions;
  j["tie_word_embeddings"] = c.tied_embeddings;
  j["bos_token_id"] = bos_eos;
  j["eos_token_id"] = bos_eos;
  j["torch_dtype"] = torch_dtype;
  j["use_cache"] = true;
  return j;
}

std::string moetrain_hf_name(const std::string& name) {
  if (name == "head") return "lm_head.weight";
  if (name.ends_with(".A_log") || name.ends_with(".dt_bias")) return "model." + name;
  return "model." + name + ".weight";
}

std::vector<NamedTensor> to_moetrain_hf(const ModelConfig& c, const ParamLayout& layout, const float* params,
                                        const std::vector<float>& router_bias) {
  std::vector<NamedTensor> out;
  for (const ParamEntry& e : layout.entries())
    out.push_back({moetrain_hf_name(e.name), e.shape,
                   std::vector<float>(params + e.offset, params + e.offset + e.numel),
                   e.name.ends_with(".A_log") || e.name.ends_with(".dt_bias")});
  if (c.n_experts > 0 && c.aux_free_bias) {
    const std::vector<std::string> units = moe_unit_prefixes(c);
    MT_CHECK(router_bias.empty() || router_bias.size() == units.size() * size_t(c.n_experts),
             "router_bias has {} values for {} MoE blocks of {} experts", router_bias.size(), units.size(),
             c.n_experts);
    for (size_t u = 0; u < units.size(); ++u) {
      std::vector<float> b(size_t(c.n_experts), 0.0f);
      if (!router_bias.empty()) std::copy_n(router_bias.begin() + int64_t(u) * c.n_experts, c.n_experts, b.begin());
      out.push_back({units[u] + ".router_bias", {c.n_experts}, std::move(b), /*keep_f32=*/true});
    }
  }
  return out;
}

Result<ModelConfig> model_config_from_moetrain_hf(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) return Status::errorf("{}: not a JSON object", path);
  const int version = j.value("moetrain_code_version", -1);
  if (version != kHfCodeVersion)
    return Status::errorf("{}: \"moetrain_code_version\" = {}: this moetrain reads version {}", path,
                          j.contains("moetrain_code_version") ? j["moetrain_code_version"].dump() : "missing",
                          kHfCodeVersion);
  if (!j.contains("moetrain_model") || !j["moetrain_model"].is_object())
    return Status::errorf("{}: \"moetrain_model\" (the run's [model] table) is missing or not an object", path);
  const std::string at = path + " (\"moetrain_model\")";
  std::string text = "[model]\n";
  for (const auto& [k, v] : j["moetrain_model"].items()) {
    auto value = json_to_toml_value(v, k, at);
    if (!value) return value.status();
    text += toml_quote(k) + " = " + value.value() + "\n";
  }
  ModelConfig c;
  ConfigSchema schema("model config");
  declare_keys(schema, c);
  ConfigOrigins origins;
  MT_RETURN_IF_ERROR(schema.load(text, at, {}, origins));
  return c;
}

Status from_moetrain_hf(const ModelConfig& c, const ParamLayout& layout, const std::map<std::string, NamedTensor>& hf,
                        float* params, std::vector<float>& router_bias) {
  auto take = [&](const std::string& name, const std::vector<int64_t>& shape, float* dst) -> Status {
    auto it = hf.find(name);
    if (it == hf.end()) return Status::errorf("tensor {} is missing", name);
    if (it->second.shape != shape)
      return Status::errorf("tensor {} has shape [{}], expected [{}]", name, fmt::join(it->second.shape, ", "),
                            fmt::join(shape, ", "));
    std::memcpy(dst, it->second.data.data(), it->second.data.size() * sizeof(float));
    return Status::ok();
  };
  std::set<std::string> names;
  for (const ParamEntry& e : layout.entries()) {
    names.insert(moetrain_hf_name(e.name));
    MT_RETURN_IF_ERROR(take(moetrain_hf_name(e.name), e.shape, params + e.offset));
  }
  router_bias.clear();
  if (c.n_experts > 0 && c.aux_free_bias) {
    const std::vector<std::string> units = moe_unit_prefixes(c);
    router_bias.assign(units.size() * size_t(c.n_experts), 0.0f);
    for (size_t u = 0; u < units.size(); ++u) {
      names.insert(units[u] + ".router_bias");
      MT_RETURN_IF_ERROR(take(units[u] + ".router_bias", {c.n_experts}, router_bias.data() + u * size_t(c.n_experts)));
    }
  }
  for (const auto& [name, t] : hf)
    if (!names.count(name)) return Status::errorf("tensor {} has no place in the model config.json describes", name);
  return Status::ok();
}

}  // namespace mt
