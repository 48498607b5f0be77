// hf_moetrain.h — moetrain's model as a Hugging Face custom-code model
// (MoetrainForCausalLM): config.json with "auto_map", the project's own
// configuration_moetrain.py / modeling_moetrain.py (src/export/hf_code/,
// embedded in the binary) and the tensors under moetrain's names. Used for
// every architecture no transformers class holds exactly; loaded with
// trust_remote_code=True. docs/inference.md has the format.
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

inline constexpr const char* kHfCustomArchitecture = "MoetrainForCausalLM";
// config.json's "moetrain_code_version"; MOETRAIN_CODE_VERSION in the Python
// files must say the same (ModelExport.CustomCodeFilesCarryTheFormatVersion checks).
inline constexpr int kHfCodeVersion = 1;

struct HfCodeFile {
  const char* name;  // file name in the export directory
  const char* text;
};
// The modeling code, as built into this binary (cmake/embed_hf_code.cmake).
const std::vector<HfCodeFile>& hf_code_files();

// Ok when the modeling code computes what `c` computes at inference; else
// the feature it cannot, named by its model.* key.
Status check_moetrain_hf(const ModelConfig& c);

// config.json: the [model] table as "moetrain_model" (every key, as the run
// config reads it), auto_map, token ids (`bos_eos` is the end-of-document id)
// and the dtype from_pretrained loads as.
nlohmann::json moetrain_hf_config(const ModelConfig& c, int64_t max_positions, int64_t bos_eos,
                                  const char* torch_dtype = "float32");

// A parameter's name in the export: "model." + name + ".weight" (".A_log"
// and ".dt_bias" without the suffix), the untied head as "lm_head.weight".
std::string moetrain_hf_name(const std::string& name);

// The tensors: every parameter, and each MoE block's aux-loss-free selection
// bias ("model.layers.<l>.moe.router_bias", "model.mtp.<k>.moe.router_bias";
// zeros if `router_bias` is empty) when c.aux_free_bias. The biases, A_log
// and dt_bias stay F32 in a bf16 export (NamedTensor::keep_f32).
std::vector<NamedTensor> to_moetrain_hf(const ModelConfig& c, const ParamLayout& layout, const float* params,
                                        const std::vector<float>& router_bias);

// config.json -> the model config: "moetrain_model" read through the run
// config's [model] schema (errors name config.json and the key).
Result<ModelConfig> model_config_from_moetrain_hf(const nlohmann::json& j, const std::string& path);

// The reverse of to_moetrain_hf: fills `params` (layout.total() floats) and
// `router_bias` (empty without aux_free_bias). Errors name the tensor.
Status from_moetrain_hf(const ModelConfig& c, const ParamLayout& layout, const std::map<std::string, NamedTensor>& hf,
                        float* params, std::vector<float>& router_bias);

}  // namespace mt
