// hf_qwen2_moe.h — moetrain's model as Hugging Face transformers'
// Qwen2MoeForCausalLM (config.json and tensor names), both ways. The mapping
// and why it is exact are in docs/inference.md ("export and import").
// Legend: D model, H heads, Hkv kv heads, Dh head dim, F expert hidden,
// Fd dense FFN hidden, S shared experts, E experts, V vocab.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "export/named_tensor.h"
#include "model/config.h"
#include "model/param_layout.h"

namespace mt {

inline constexpr const char* kHfArchitecture = "Qwen2MoeForCausalLM";

// Ok when Qwen2MoeForCausalLM computes what `c` computes; otherwise the first
// feature it cannot represent, named by its model.* key, e.g.
// "model.d_latent = 64: latent MoE has no counterpart in Qwen2MoeForCausalLM".
Status check_qwen2_moe(const ModelConfig& c);

// config.json for `c`. Token ids: `bos_eos` (end of document) is both the BOS
// lm-eval and generate() prepend and the EOS that stops generation.
// `torch_dtype` ("float32" or "bfloat16") is what from_pretrained loads as.
nlohmann::json qwen2_moe_config(const ModelConfig& c, int64_t max_positions, int64_t bos_eos,
                                const char* torch_dtype = "float32");

// The model's architecture from a config.json, on top of `base` (the keys
// config.json does not speak of: init, router losses, capacity). Refuses what
// moetrain cannot represent, naming the config.json key.
Result<ModelConfig> model_config_from_qwen2_moe(const nlohmann::json& j, const std::string& path,
                                                ModelConfig base);

// The HF tensors of parameters `params` laid out by `layout` for config `c`
// (check_qwen2_moe(c) must hold).
std::vector<NamedTensor> to_qwen2_moe(const ModelConfig& c, const ParamLayout& layout, const float* params);

// The reverse: fills `params` (layout.total() floats) from HF tensors by name.
// Errors name the missing tensor, a wrong shape, or a non-zero value that has
// no counterpart (attention biases, the shared-expert gate).
Status from_qwen2_moe(const ModelConfig& c, const ParamLayout& layout,
                      const std::map<std::string, NamedTensor>& hf, float* params);

}  // namespace mt
