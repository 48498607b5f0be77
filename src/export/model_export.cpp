// model_export.cpp — export (tensors in the format's names + config +
// tokenizer files, export/safetensors_dir.h) and import (safetensors +
// config -> run directory).
#include "export/model_export.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>

#include "ckpt/checkpoint.h"
#include "core/file_io.h"
#include "export/export_files.h"
#include "export/hf_tokenizer.h"
#include "rundir/run_dir.h"

namespace fs = std::filesystem;

namespace mt {
namespace {

constexpr const char* kConfigMetadataKey = "moetrain.config";  // the run config TOML, in every shard's metadata

// moetrain's own names, shapes and values; router biases included.
std::vector<NamedTensor> raw_tensors(const InferenceModel& m) {
  std::vector<NamedTensor> out;
  for (const ParamEntry& e : m.layout.entries())
    out.push_back(
        {e.name, e.shape, std::vector<float>(m.params.begin() + e.offset, m.params.begin() + e.offset + e.numel)});
  if (!m.router_bias.empty()) out.push_back({"router_bias", {int64_t(m.router_bias.size())}, m.router_bias});
  return out;
}

}  // namespace

Result<HfClass> resolve_hf_class(const ModelConfig& c, HfClass asked) {
  // What the custom code cannot compute, no transformers class can.
  MT_RETURN_IF_ERROR(check_moetrain_hf(c));
  if (asked == HfClass::kMoetrain) return HfClass::kMoetrain;
  Status qwen = check_qwen2_moe(c);
  if (qwen) return HfClass::kQwen2Moe;
  if (asked == HfClass::kQwen2Moe) return qwen;
  return HfClass::kMoetrain;
}

namespace {

// model.gguf: the model, its hyperparameters and its tokenizer in one file.
Result<ExportSummary> export_gguf(const InferenceModel& m, const TextCodec& codec, const ExportOptions& opt) {
  auto f = to_gguf(m, codec, opt.gguf_type);
  if (!f) return f.status();
  std::error_code ec;
  fs::create_directories(opt.out, ec);
  if (ec) return Status::errorf("{}: cannot create: {}", opt.out, ec.message());
  MT_RETURN_IF_ERROR(write_gguf(path_in(opt.out, "model.gguf"), f.value()));
  ExportSummary sum;
  sum.architecture = fmt::format("GGUF {}", gguf_arch_name(gguf_arch_for(m.cfg.model).value()));
  sum.files = {"model.gguf"};
  for (const GgufTensor& t : f.value().tensors) sum.tensor_bytes += ggml_bytes(t.type, int64_t(t.data.size()));
  sum.tensors = int64_t(f.value().tensors.size());
  return sum;
}

}  // namespace

Result<ExportSummary> export_model(const InferenceModel& m, const TextCodec& codec, const ExportOptions& opt) {
  if (opt.format == ExportFormat::kGguf) return export_gguf(m, codec, opt);
  const ModelConfig& c = m.cfg.model;
  std::vector<NamedTensor> tensors;
  HfClass cls = HfClass::kAuto;
  ExportSummary sum;
  if (opt.format == ExportFormat::kHf) {
    auto resolved = resolve_hf_class(c, opt.hf_class);
    if (!resolved) return resolved.status();
    cls = resolved.value();
    if (cls == HfClass::kQwen2Moe) {
      tensors = to_qwen2_moe(c, m.layout, m.params.data());
      sum.architecture = kHfArchitecture;
    } else {
      tensors = to_moetrain_hf(c, m.layout, m.params.data(), m.router_bias);
      sum.architecture = kHfCustomArchitecture;
    }
  } else {
    tensors = raw_tensors(m);
    sum.architecture = "safetensors";
  }
  std::error_code ec;
  fs::create_directories(opt.out, ec);
  if (ec) return Status::errorf("{}: cannot create: {}", opt.out, ec.message());
  const std::string toml = to_toml(m.cfg);
  auto shards = write_safetensors_shards(opt.out, tensors,
                                         {{kConfigMetadataKey, toml}, {"moetrain.step", std::to_string(m.step)}},
                                         opt.max_shard_bytes, opt.dtype);
  if (!shards) return shards.status();
  sum.files.insert(sum.files.begin(), shards.value().begin(), shards.value().end());
  for (const NamedTensor& t : tensors)
    sum.tensor_bytes += int64_t(t.data.size()) * dtype_bytes(t.keep_f32 ? TensorDtype::kF32 : opt.dtype);
  sum.tensors = int64_t(tensors.size());
  if (opt.format == ExportFormat::kHf) {
    const int64_t bos = codec.end_of_document();
    const char* dtype = opt.dtype == TensorDtype::kF32 ? "float32" : "bfloat16";
    if (cls == HfClass::kQwen2Moe) {
      MT_RETURN_IF_ERROR(
          write_json(path_in(opt.out, "config.json"), qwen2_moe_config(c, m.cfg.train.seq_len, bos, dtype)));
    } else {
      MT_RETURN_IF_ERROR(
          write_json(path_in(opt.out, "config.json"), moetrain_hf_config(c, m.cfg.train.seq_len, bos, dtype)));
      for (const HfCodeFile& f : hf_code_files()) {
        MT_RETURN_IF_ERROR(write_file_atomic(path_in(opt.out, f.name), f.text));
        sum.files.push_back(f.name);
      }
    }
    MT_RETURN_IF_ERROR(write_json(path_in(opt.out, "generation_config.json"),
                                  {{"bos_token_id", bos}, {"eos_token_id", bos}, {"do_sample", false}}));
    sum.files.push_back("config.json");
    sum.files.push_back("generation_config.json");
  } else {
    MT_RETURN_IF_ERROR(write_file_atomic(path_in(opt.out, "config.toml"), toml));
    sum.files.push_back("config.toml");
  }
  auto tok = write_hf_tokenizer(opt.out, codec, m.cfg.train.seq_len);
  if (!tok) return tok.status();
  sum.files.insert(sum.files.end(), tok.value().begin(), tok.value().end());
  return sum;
}

Result<ImportSummary> import_model(const std::string& hf_dir, const std::string& out, int64_t step) {
  auto st = read_safetensors_model(hf_dir);
  if (!st) return st.status();
  SafetensorsModel& sm = st.value();
  ImportSummary sum;
  if (step < 0) {
    auto it = sm.metadata.find("moetrain.step");
    step = it == sm.metadata.end() ? 0 : std::strtoll(it->second.c_str(), nullptr, 10);
  }
  // The run config: the one export saved, else defaults; the architecture
  // from config.json either way (an HF directory is what HF tools read).
  RunConfig cfg;
  if (auto it = sm.metadata.find(kConfigMetadataKey); it != sm.metadata.end()) {
    auto saved = parse_run_config(it->second, hf_dir + " (safetensors metadata " + kConfigMetadataKey + ")", {});
    if (!saved) return saved.status();
    cfg = saved.value();
    sum.config_source = "the run config saved by moetrain export";
  } else {
    sum.config_source = "config.json with moetrain's defaults for the rest";
    cfg.data = DataConfig();
  }
  const std::string cfg_path = path_in(hf_dir, "config.json");
  const bool hf = fs::exists(cfg_path);
  bool custom = false;  // MoetrainForCausalLM: moetrain's names, the router bias as tensors
  if (hf) {
    auto text = read_file(cfg_path, "model config");
    if (!text) return text.status();
    auto j = nlohmann::json::parse(text.value(), nullptr, false);
    if (j.is_discarded()) return Status::errorf("{}: not JSON", cfg_path);
    custom = j.is_object() && j.value("model_type", "") == "moetrain";  // any class of the custom code
    auto mc = custom ? model_config_from_moetrain_hf(j, cfg_path) : model_config_from_qwen2_moe(j, cfg_path, cfg.model);
    if (!mc) return mc.status();
    cfg.model = mc.value();
    if (j.contains("max_position_embeddings") && j["max_position_embeddings"].is_number_integer() &&
        !sm.metadata.count(kConfigMetadataKey))
      cfg.train.seq_len = std::min<int64_t>(cfg.train.seq_len, j["max_position_embeddings"].get<int64_t>());
  } else if (!sm.metadata.count(kConfigMetadataKey)) {
    return Status::errorf("{}: no config.json (a Hugging Face model) and no {} metadata (a moetrain raw export)",
                          hf_dir, kConfigMetadataKey);
  }
  // Re-check the whole config as a run would.
  auto checked = parse_run_config(to_toml(cfg), cfg_path, {});
  if (!checked) return checked.status();
  cfg = checked.value();

  ParamLayout layout;
  build_layout(cfg.model, layout);
  std::vector<float> params(size_t(layout.total()));
  std::vector<float> bias;
  if (hf) {
    Status s = custom ? from_moetrain_hf(cfg.model, layout, sm.tensors, params.data(), bias)
                      : from_qwen2_moe(cfg.model, layout, sm.tensors, params.data());
    if (!s) return Status::errorf("{}: {}", hf_dir, s.message());
  } else {
    for (const ParamEntry& e : layout.entries()) {
      auto t = sm.tensors.find(e.name);
      if (t == sm.tensors.end() || t->second.shape != e.shape)
        return Status::errorf("{}: tensor {} is missing or has another shape than the saved config gives", hf_dir,
                              e.name);
      std::memcpy(params.data() + e.offset, t->second.data.data(), size_t(e.numel) * 4);
    }
    if (auto t = sm.tensors.find("router_bias"); t != sm.tensors.end()) bias = t->second.data;
  }
  std::vector<TensorView> views;
  for (const ParamEntry& e : layout.entries()) views.push_back({e.name, e.shape, params.data() + e.offset});
  if (!bias.empty()) views.push_back({"router_bias", {int64_t(bias.size())}, bias.data()});
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) return Status::errorf("{}: cannot create: {}", out, ec.message());
  const std::string toml = to_toml(cfg);
  MT_RETURN_IF_ERROR(save_run_config(out, toml));
  if (fs::exists(path_in(hf_dir, "tokenizer.model"), ec)) {
    auto tok = read_file(path_in(hf_dir, "tokenizer.model"), "tokenizer model");
    if (!tok) return tok.status();
    MT_RETURN_IF_ERROR(write_file_atomic(path_in(out, "tokenizer.model"), tok.value()));
  }
  nlohmann::json state = {{"step", step}, {"imported_from", fs::absolute(hf_dir).lexically_normal().string()}};
  MT_RETURN_IF_ERROR(write_checkpoint(path_in(out, "checkpoints"), step, views, toml, state, 0));
  sum.checkpoint = path_in(path_in(out, "checkpoints"), checkpoint_dir_name(step));
  sum.params = layout.total();
  return sum;
}

}  // namespace mt
