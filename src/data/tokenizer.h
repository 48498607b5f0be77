// tokenizer.h — the pipeline's subword tokenizer: SentencePiece BPE with byte
// fallback (every byte sequence encodes, nothing maps to <unk>), identity
// normalisation (code keeps its whitespace), and four control tokens the
// pipeline inserts by id. Control tokens are never produced from text, so a
// web page containing "<|success|>" cannot forge an outcome tag.
// The hash (xxh64 of the serialized model) is recorded in every shard.
// encode() runs SentencePiece one word at a time behind a per-thread word
// cache (word_cache_encoder.h), with ids identical to SentencePiece's own.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace mt {

class WordCacheEncoder;

enum class Special { kEndOfDocument, kSuccess, kFailure, kPathHeader };
inline constexpr int kNumSpecials = 4;
// Piece strings of the specials, indexed by Special.
const char* special_piece(Special s);

struct TokenizerTrainOptions {
  int64_t vocab_size = 8000;            // upper bound: a small corpus may yield fewer pieces
  int64_t sample_bytes = 64 << 20;      // text fed to the trainer, taken evenly across the documents
  int64_t threads = 2;
};

// One vocabulary entry as SentencePiece holds it (GGUF export lists them).
struct TokenPiece {
  enum class Kind { kNormal, kUnknown, kControl, kUserDefined, kUnused, kByte };
  std::string text;
  float score = 0.0f;
  Kind kind = Kind::kNormal;
};

class Tokenizer {
 public:
  ~Tokenizer();
  // Loads a serialized SentencePiece model; errors name `name`. The model must
  // define the four special pieces.
  static Result<std::unique_ptr<Tokenizer>> from_serialized(std::string model, const std::string& name);
  static Result<std::unique_ptr<Tokenizer>> load(const std::string& path);
  // Trains on `texts` (deterministic: same texts and options, same model bytes).
  static Result<std::string> train(const std::vector<std::string_view>& texts, const TokenizerTrainOptions& opt);

  // Appends the ids of `text` to out: exactly SentencePiece's ids for the
  // whole text. Thread-safe. Each calling thread keeps a word cache of
  // WordCacheEncoder::kCacheEntries entries (10 MiB) while it lives.
  void encode(std::string_view text, std::vector<int32_t>& out) const;
  // SentencePiece on the whole text in one call: the reference encode() must
  // equal (tests, benchmarks) and what a model the word cache cannot serve gets.
  void encode_plain(std::string_view text, std::vector<int32_t>& out) const;
  // Why encode() is plain SentencePiece for this model; "" when the word
  // cache is used.
  const std::string& word_cache_off_reason() const { return word_cache_off_; }
  std::string decode(const int32_t* ids, int64_t n) const;
  // Every piece by id: text, score and kind.
  std::vector<TokenPiece> pieces() const;
  int32_t special(Special s) const { return special_[int(s)]; }
  int64_t vocab_size() const { return vocab_size_; }
  uint64_t hash() const { return hash_; }
  const std::string& serialized() const { return model_; }

 private:
  Tokenizer();
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::unique_ptr<WordCacheEncoder> word_cache_;  // null: encode with sp_ directly
  std::string word_cache_off_;
  std::string model_;
  int32_t special_[kNumSpecials] = {};
  int64_t vocab_size_ = 0;
  uint64_t hash_ = 0;
};

}  // namespace mt
