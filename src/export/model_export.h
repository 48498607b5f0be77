// model_export.h — `moetrain export` and `moetrain import`: a checkpoint to a
// Hugging Face model directory (Qwen2MoeForCausalLM, export/hf_qwen2_moe.h,
// or the project's custom code, export/hf_moetrain.h) or to moetrain's raw
// parameters in safetensors, fp32 or bf16, or to a GGUF file for llama.cpp
// (export/gguf_model.h); and an hf or safetensors directory back to a run
// directory with one checkpoint. One file per format
// in this folder; formats: docs/inference.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "export/gguf_model.h"
#include "export/hf_moetrain.h"
#include "export/hf_qwen2_moe.h"
#include "export/safetensors_dir.h"
#include "train/inference_model.h"

namespace mt {

enum class ExportFormat { kHf, kSafetensors, kGguf };
// Which Hugging Face class an hf export targets: auto = Qwen2MoeForCausalLM
// when it computes what the model computes, else the custom code
// (MoetrainForCausalLM, export/hf_moetrain.h).
enum class HfClass { kAuto, kQwen2Moe, kMoetrain };

struct ExportOptions {
  ExportFormat format = ExportFormat::kHf;
  HfClass hf_class = HfClass::kAuto;
  std::string out;                           // directory, created; existing files of the same names replaced
  int64_t max_shard_bytes = 5'000'000'000;   // above this total, model-0000i-of-0000N.safetensors + index
  TensorDtype dtype = TensorDtype::kF32;     // of the tensors written (bf16: rounded to nearest even)
  GgmlType gguf_type = GgmlType::kF32;       // gguf: F32, F16, BF16 or Q8_0 (export/gguf_model.h)
};

// The class an hf export of `c` gets, or the refusal naming the model.* key
// (only when `asked` is kQwen2Moe and that class cannot hold the model).
Result<HfClass> resolve_hf_class(const ModelConfig& c, HfClass asked);

// What export wrote, for the CLI's summary.
struct ExportSummary {
  std::string architecture;                  // the HF class, "safetensors", or "GGUF <llama.cpp architecture>"
  std::vector<std::string> files;            // relative to out
  int64_t tensor_bytes = 0;
  int64_t tensors = 0;
};

// Writes the model and its tokenizer files. `codec` is the run's tokenizer.
// Refuses (before writing anything) a model the format cannot represent.
Result<ExportSummary> export_model(const InferenceModel& m, const TextCodec& codec, const ExportOptions& opt);

// `moetrain import`: an exported (custom code, or any Qwen2MoeForCausalLM) directory to
// run directory `out`: config.toml, tokenizer.model (if the directory has
// one) and checkpoints/step_<step>. The run config is the one export saved in
// the safetensors metadata when present (so a round trip keeps train/data
// keys), else defaults with the architecture from config.json. step < 0: the
// step export recorded (0 for other models).
struct ImportSummary {
  std::string checkpoint;  // the directory written
  int64_t params = 0;
  std::string config_source;
};
Result<ImportSummary> import_model(const std::string& hf_dir, const std::string& out, int64_t step);

}  // namespace mt
