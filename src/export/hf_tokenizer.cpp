// hf_tokenizer.cpp — see hf_tokenizer.h.
#include "export/hf_tokenizer.h"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/file_io.h"
#include "export/export_files.h"
#include "data/byte_tokenizer.h"
#include "data/tokenizer.h"
#include "train/inference_model.h"

namespace fs = std::filesystem;

namespace mt {

// Tokenizer files transformers loads. SentencePiece runs: the model itself,
// read by LlamaTokenizer in legacy mode, which runs SentencePiece unchanged
// on the text (identity normalisation, no dummy prefix: what moetrain does).
// Byte-tokenizer runs: a tokenizers BPE with no merges whose vocabulary is
// the 256 byte pieces <0x00>..<0xFF>, so byte fallback maps byte b to id b.
Result<std::vector<std::string>> write_hf_tokenizer(const std::string& dir, const TextCodec& codec, int64_t max_len) {
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
      added.push_back({{"id", id},
                       {"content", piece},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", false},
                       {"special", true}});
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
          {"single",
           {{{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 0}}}},
            {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
          {"pair",
           {{{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 0}}}},
            {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
            {{"Sequence", {{"id", "B"}, {"type_id", 0}}}}}},
          {"special_tokens",
           {{"<|endoftext|>",
             {{"id", "<|endoftext|>"}, {"ids", {ByteTokenizer::kEndOfDocument}}, {"tokens", {"<|endoftext|>"}}}}}}}},
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

}  // namespace mt
