// gguf_tokenizer.cpp — see gguf_tokenizer.h.
#include "export/gguf_tokenizer.h"

#include <fmt/format.h>

#include "data/byte_tokenizer.h"
#include "data/tokenizer.h"
#include "train/inference_model.h"

namespace mt {
namespace {

// llama.cpp's token types (llama_token_type).
enum : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

int32_t gguf_type(TokenPiece::Kind k) {
  switch (k) {
    case TokenPiece::Kind::kNormal:
      return kNormal;
    case TokenPiece::Kind::kUnknown:
      return kUnknown;
    case TokenPiece::Kind::kControl:
      return kControl;
    case TokenPiece::Kind::kUserDefined:
      return kUserDefined;
    case TokenPiece::Kind::kUnused:
      return kUnused;
    case TokenPiece::Kind::kByte:
      return kByte;
  }
  return kNormal;
}

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += char(cp);
  } else if (cp < 0x800) {
    s += char(0xC0 | (cp >> 6));
    s += char(0x80 | (cp & 0x3F));
  } else {
    s += char(0xE0 | (cp >> 12));
    s += char(0x80 | ((cp >> 6) & 0x3F));
    s += char(0x80 | (cp & 0x3F));
  }
  return s;
}

}  // namespace

std::string gpt2_byte_char(int b) {
  // Printable Latin-1 bytes stand for themselves; the other 68 take code
  // points 256, 257, ... in byte order (GPT-2's bytes_to_unicode).
  auto printable = [](int x) { return (x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF); };
  if (printable(b)) return utf8(uint32_t(b));
  int n = 0;
  for (int x = 0; x < b; ++x) n += printable(x) ? 0 : 1;
  return utf8(uint32_t(256 + n));
}

void add_gguf_tokenizer(GgufFile& f, const TextCodec& codec, int64_t vocab_size) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<float> scores;
  if (codec.is_sentencepiece()) {
    for (const TokenPiece& p : codec.sentencepiece()->pieces()) {
      tokens.push_back(p.text);
      types.push_back(gguf_type(p.kind));
      scores.push_back(p.score);
    }
  } else {
    for (int b = 0; b < 256; ++b) {
      tokens.push_back(gpt2_byte_char(b));
      types.push_back(kNormal);
    }
    for (const char* s : {"<|endoftext|>", "<|pad|>", "<|file|>"}) {
      tokens.push_back(s);
      types.push_back(kControl);
    }
  }
  while (int64_t(tokens.size()) < vocab_size) {
    tokens.push_back(fmt::format("<|unused_{}|>", tokens.size()));
    types.push_back(kUnused);
    if (codec.is_sentencepiece()) scores.push_back(0.0f);
  }
  const uint32_t eod = uint32_t(codec.end_of_document());
  if (codec.is_sentencepiece()) {
    f.metadata.push_back({"tokenizer.ggml.model", std::string("llama")});
    f.metadata.push_back({"tokenizer.ggml.pre", std::string("default")});
    f.metadata.push_back({"tokenizer.ggml.tokens", tokens});
    f.metadata.push_back({"tokenizer.ggml.scores", scores});
    f.metadata.push_back({"tokenizer.ggml.token_type", types});
    f.metadata.push_back({"tokenizer.ggml.add_space_prefix", false});
  } else {
    f.metadata.push_back({"tokenizer.ggml.model", std::string("gpt2")});
    f.metadata.push_back({"tokenizer.ggml.pre", std::string("default")});
    f.metadata.push_back({"tokenizer.ggml.tokens", tokens});
    f.metadata.push_back({"tokenizer.ggml.token_type", types});
    f.metadata.push_back({"tokenizer.ggml.merges", std::vector<std::string>{}});
  }
  f.metadata.push_back({"tokenizer.ggml.bos_token_id", eod});
  f.metadata.push_back({"tokenizer.ggml.eos_token_id", eod});
  f.metadata.push_back({"tokenizer.ggml.add_bos_token", true});
  f.metadata.push_back({"tokenizer.ggml.add_eos_token", false});
}

}  // namespace mt
