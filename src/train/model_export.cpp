// model_export.cpp — export (tensors + config.json + tokenizer files, sharded
// safetensors) and import (safetensors + config.json -> run directory).
#include "train/model_export.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "ckpt/checkpoint.h"
#include "core/file_system.h"
#include "ckpt/safetensors.h"
#include "core/bf16.h"
#include "core/file_io.h"
#include "data/byte_tokenizer.h"
#include "rundir/run_dir.h"

namespace fs = std::filesystem;

namespace mt {
namespace {

constexpr const char* kConfigMetadataKey = "moetrain.config";  // the run config TOML, in every shard's metadata
constexpr const char* kIndexFile = "model.safetensors.index.json";

std::string path_in(const std::string& dir, const std::string& name) { return (fs::path(dir) / name).string(); }

Status write_json(const std::string& path, const nlohmann::json& j, FileSystem& fs = default_file_system()) {
  return write_file_atomic(path, j.dump(2) + "\n", fs);
}

// Tokenizer files transformers loads. SentencePiece runs: the model itself,
// read by LlamaTokenizer in legacy mode, which runs SentencePiece unchanged
// on the text (identity normalisation, no dummy prefix: what moetrain does).
// Byte-tokenizer runs: a tokenizers BPE with no merges whose vocabulary is
// the 256 byte pieces <0x00>..<0xFF>, so byte fallback maps byte b to id b.
Result<std::vector<std::string>> write_tokenizer(const std::string& dir, const TextCodec& codec, int64_t max_len) {
  std::vector<std::string> files;
  const std::string eod = codec.is_sentencepiece() ? special_piece(Special::kEndOfDocument) : "<|endoftext|>";
  nlohmann::json cfg = {{"bos_token", eod},
                        {"eos_token", eod},
                        {"add_bos_token", true},
                        {"add_eos_token", false},
                        {"clean_up_tokenization_spaces", false},
                        {"model_max_length", max_len}};
  if (codec.is_sentencepiece()) {
    MT_RETURN_IF_ERROR(write_file_atomic(path_in(dir, "tokenizer.model"), codec.sentencepiece()->serialized()));
    files.push_back("tokenizer.model");
    cfg["tokenizer_class"] = "LlamaTokenizer";
    cfg["unk_token"] = "<unk>";
    cfg["pad_token"] = nullptr;
    cfg["legacy"] = true;
    cfg["add_prefix_space"] = false;
    cfg["sp_model_kwargs"] = nlohmann::json::object();
    cfg["spaces_between_special_tokens"] = false;
  } else {
    nlohmann::json vocab = nlohmann::json::object();
    for (int b = 0; b < 256; ++b) vocab[fmt::format("<0x{:02X}>", b)] = b;
    const std::pair<int, const char*> specials[] = {{ByteTokenizer::kEndOfDocument, "<|endoftext|>"},
                                                    {ByteTokenizer::kPad, "<|pad|>"},
                                                    {ByteTokenizer::kPathHeader, "<|file|>"}};
    nlohmann::json added = nlohmann::json::array();
    for (const auto& [id, piece] : specials) {
      vocab[piece] = id;
      added.push_back({{"id", id}, {"content", piece}, {"single_word", false}, {"lstrip", false},
                       {"rstrip", false}, {"normalized", false}, {"special", true}});
    }
    nlohmann::json tok = {
        {"version", "1.0"},
        {"truncation", nullptr},
        {"padding", nullptr},
        {"added_tokens", added},
        {"normalizer", nullptr},
        {"pre_tokenizer", nullptr},
        {"post_processor",
         {{"type", "TemplateProcessing"},
          {"single", {{{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 0}}}},
                      {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
          {"pair", {{{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 0}}}},
                    {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                    {{"Sequence", {{"id", "B"}, {"type_id", 0}}}}}},
          {"special_tokens",
           {{"<|endoftext|>", {{"id", "<|endoftext|>"}, {"ids", {ByteTokenizer::kEndOfDocument}},
                               {"tokens", {"<|endoftext|>"}}}}}}}},
        {"decoder", {{"type", "Sequence"}, {"decoders", {{{"type", "ByteFallback"}}, {{"type", "Fuse"}}}}}},
        {"model",
         {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", nullptr},
          {"continuing_subword_prefix", nullptr},
          {"end_of_word_suffix", nullptr},
          {"fuse_unk", false},
          {"byte_fallback", true},
          {"ignore_merges", false},
          {"vocab", vocab},
          {"merges", nlohmann::json::array()}}}};
    MT_RETURN_IF_ERROR(write_json(path_in(dir, "tokenizer.json"), tok));
    files.push_back("tokenizer.json");
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast";
    cfg["pad_token"] = "<|pad|>";
  }
  MT_RETURN_IF_ERROR(write_json(path_in(dir, "tokenizer_config.json"), cfg));
  files.push_back("tokenizer_config.json");
  nlohmann::json special = {{"bos_token", eod}, {"eos_token", eod}};
  if (codec.is_sentencepiece()) special["unk_token"] = "<unk>";
  MT_RETURN_IF_ERROR(write_json(path_in(dir, "special_tokens_map.json"), special));
  files.push_back("special_tokens_map.json");
  return files;
}

// moetrain's own names, shapes and values; router biases included.
std::vector<NamedTensor> raw_tensors(const InferenceModel& m) {
  std::vector<NamedTensor> out;
  for (const ParamEntry& e : m.layout.entries())
    out.push_back({e.name, e.shape,
                   std::vector<float>(m.params.begin() + e.offset, m.params.begin() + e.offset + e.numel)});
  if (!m.router_bias.empty()) out.push_back({"router_bias", {int64_t(m.router_bias.size())}, m.router_bias});
  return out;
}

}  // namespace

Result<std::vector<std::string>> write_safetensors_shards(const std::string& dir, const std::vector<NamedTensor>& tensors,
                                                          const std::map<std::string, std::string>& metadata,
                                                          int64_t max_shard_bytes, FileSystem& file_system) {
  // Greedy packing in the given order.
  std::vector<std::vector<const NamedTensor*>> shards(1);
  int64_t in_shard = 0, total = 0;
  std::set<std::string> names;
  for (const NamedTensor& t : tensors) {
    if (!names.insert(t.name).second) return Status::errorf("{}: tensor {} given twice", dir, t.name);
    const int64_t bytes = int64_t(t.data.size()) * 4;
    if (in_shard > 0 && in_shard + bytes > max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(&t);
    in_shard += bytes;
    total += bytes;
  }
  std::map<std::string, std::string> meta = metadata;
  meta["format"] = "pt";
  std::vector<std::string> files;
  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t s = 0; s < shards.size(); ++s) {
    const std::string name = shards.size() == 1 ? "model.safetensors"
                                                : fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, shards.size());
    // The safetensors header lists tensors by name; data in that order.
    std::vector<const NamedTensor*> order = shards[s];
    std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->name < b->name; });
    std::vector<SafetensorsEntry> entries;
    int64_t at = 0;
    for (const NamedTensor* t : order) {
      entries.push_back({t->name, "F32", t->shape, at, at + int64_t(t->data.size()) * 4});
      at = entries.back().end;
      weight_map[t->name] = name;
    }
    const std::string header = encode_safetensors_header(entries, meta);
    MT_RETURN_IF_ERROR(write_file_atomic(
        path_in(dir, name),
        [&](WritableFile& f) {
          MT_RETURN_IF_ERROR(f.append(header.data(), int64_t(header.size())));
          for (const NamedTensor* t : order) MT_RETURN_IF_ERROR(f.append(t->data.data(), int64_t(t->data.size()) * 4));
          return Status::ok();
        },
        file_system));
    files.push_back(name);
  }
  std::error_code ec;
  if (shards.size() > 1) {
    MT_RETURN_IF_ERROR(
        write_json(path_in(dir, kIndexFile), {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}},
                   file_system));
    files.push_back(kIndexFile);
    fs::remove(path_in(dir, "model.safetensors"), ec);  // a stale unsharded file would shadow the index
  } else {
    fs::remove(path_in(dir, kIndexFile), ec);
  }
  return files;
}

Result<ExportSummary> export_model(const InferenceModel& m, const TextCodec& codec, const ExportOptions& opt) {
  const ModelConfig& c = m.cfg.model;
  std::vector<NamedTensor> tensors;
  if (opt.format == ExportFormat::kHf) {
    MT_RETURN_IF_ERROR(check_qwen2_moe(c));
    tensors = to_qwen2_moe(c, m.layout, m.params.data());
  } else {
    tensors = raw_tensors(m);
  }
  std::error_code ec;
  fs::create_directories(opt.out, ec);
  if (ec) return Status::errorf("{}: cannot create: {}", opt.out, ec.message());
  ExportSummary sum;
  const std::string toml = to_toml(m.cfg);
  auto shards = write_safetensors_shards(opt.out, tensors,
                                         {{kConfigMetadataKey, toml}, {"moetrain.step", std::to_string(m.step)}},
                                         opt.max_shard_bytes);
  if (!shards) return shards.status();
  sum.files = shards.value();
  for (const NamedTensor& t : tensors) sum.tensor_bytes += int64_t(t.data.size()) * 4;
  sum.tensors = int64_t(tensors.size());
  if (opt.format == ExportFormat::kHf) {
    const int64_t bos = codec.end_of_document();
    MT_RETURN_IF_ERROR(write_json(path_in(opt.out, "config.json"), qwen2_moe_config(c, m.cfg.train.seq_len, bos)));
    MT_RETURN_IF_ERROR(write_json(path_in(opt.out, "generation_config.json"),
                                  {{"bos_token_id", bos}, {"eos_token_id", bos}, {"do_sample", false}}));
    sum.files.push_back("config.json");
    sum.files.push_back("generation_config.json");
  } else {
    MT_RETURN_IF_ERROR(write_file_atomic(path_in(opt.out, "config.toml"), toml));
    sum.files.push_back("config.toml");
  }
  auto tok = write_tokenizer(opt.out, codec, m.cfg.train.seq_len);
  if (!tok) return tok.status();
  sum.files.insert(sum.files.end(), tok.value().begin(), tok.value().end());
  return sum;
}

Result<SafetensorsModel> read_safetensors_model(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  const std::string index = path_in(dir, kIndexFile);
  if (fs::exists(index, ec)) {
    auto text = read_file(index, "safetensors index");
    if (!text) return text.status();
    auto j = nlohmann::json::parse(text.value(), nullptr, false);
    if (j.is_discarded() || !j.contains("weight_map") || !j["weight_map"].is_object())
      return Status::errorf("{}: not a safetensors index (no \"weight_map\" object)", index);
    std::set<std::string> seen;
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (!file.is_string()) return Status::errorf("{}: weight_map[\"{}\"] is not a file name", index, name);
      if (seen.insert(file.get<std::string>()).second) files.push_back(file.get<std::string>());
    }
  } else if (fs::exists(path_in(dir, "model.safetensors"), ec)) {
    files.push_back("model.safetensors");
  } else {
    return Status::errorf("{}: neither model.safetensors nor {}", dir, kIndexFile);
  }
  SafetensorsModel out;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string path = path_in(dir, files[i]);
    auto file = default_file_system().open_readable_file(path);
    if (!file) return file.status();
    auto header = read_safetensors_header(*file.value(), path);
    if (!header) return header.status();
    if (i == 0) out.metadata = header.value().metadata;
    for (const SafetensorsEntry& e : header.value().entries) {
      NamedTensor t{e.name, e.shape, {}};
      const int64_t esize = safetensors_dtype_bytes(e.dtype), n = (e.end - e.begin) / std::max<int64_t>(1, esize);
      std::string raw(size_t(e.end - e.begin), '\0');
      MT_RETURN_IF_ERROR(file.value()->read_at(header.value().data_start + e.begin, raw.data(), e.end - e.begin));
      t.data.resize(size_t(n));
      if (e.dtype == "F32") {
        std::memcpy(t.data.data(), raw.data(), raw.size());
      } else if (e.dtype == "BF16") {
        for (int64_t k = 0; k < n; ++k) {
          uint16_t b;
          std::memcpy(&b, raw.data() + 2 * k, 2);
          uint32_t u = uint32_t(b) << 16;
          std::memcpy(&t.data[size_t(k)], &u, 4);
        }
      } else {
        return Status::errorf("{}: tensor {} has dtype {}; import reads F32 and BF16", path, e.name, e.dtype);
      }
      if (!out.tensors.emplace(e.name, std::move(t)).second)
        return Status::errorf("{}: tensor {} appears in two shards", path, e.name);
    }
  }
  return out;
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
  if (hf) {
    auto text = read_file(cfg_path, "model config");
    if (!text) return text.status();
    auto j = nlohmann::json::parse(text.value(), nullptr, false);
    if (j.is_discarded()) return Status::errorf("{}: not JSON", cfg_path);
    auto mc = model_config_from_qwen2_moe(j, cfg_path, cfg.model);
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
    Status s = from_qwen2_moe(cfg.model, layout, sm.tensors, params.data());
    if (!s) return Status::errorf("{}: {}", hf_dir, s.message());
  } else {
    for (const ParamEntry& e : layout.entries()) {
      auto t = sm.tensors.find(e.name);
      if (t == sm.tensors.end() || t->second.shape != e.shape)
        return Status::errorf("{}: tensor {} is missing or has another shape than the saved config gives", hf_dir, e.name);
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
