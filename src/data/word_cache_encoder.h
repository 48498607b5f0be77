// word_cache_encoder.h — SentencePiece encoding of a text as the
// concatenation of its chunks' encodings (chunk_cutter.h says why this gives
// exactly the same ids), with each thread caching chunk -> ids, as HF
// tokenizers and tiktoken do. Natural text and code repeat their words, so
// most chunks are found in the cache; new words go through BpeWord (the same
// BPE on integer tables), and the rare ones it declines, or chunks too long
// to cache, through SentencePiece itself.
// Used by Tokenizer::encode; measured speed-ups in docs/tokenizer-speed.md.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "data/bpe_word.h"
#include "data/chunk_cutter.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace mt {

class WordCache;

class WordCacheEncoder {
 public:
  // Words cached per thread: WordCache allocates 80 bytes per entry, 10 MiB
  // per encoding thread, held while the thread lives. 2^17 words hold the
  // working vocabulary of real text (measured: ~10% of chunks miss on 15 MB
  // of Python docs, headers and man pages, most of them used once).
  static constexpr int64_t kCacheEntries = int64_t(1) << 17;

  // `sp` (loaded from `serialized`) must outlive the encoder. Fails, with the
  // reason, when the model's settings do not allow exact chunked encoding or
  // a self-check on a probe text disagrees with plain SentencePiece; the
  // caller then encodes with SentencePiece directly.
  static Result<std::unique_ptr<WordCacheEncoder>> create(const sentencepiece::SentencePieceProcessor& sp,
                                                          std::string_view serialized);
  ~WordCacheEncoder();

  // Appends the ids of `text`: equal to SentencePiece's Encode(text).
  // Thread-safe: each thread uses its own cache.
  void encode(std::string_view text, std::vector<int32_t>& out) const;
  // The same with a caller-owned cache (tests, the creation self-check).
  void encode(std::string_view text, std::vector<int32_t>& out, WordCache& cache) const;

  const ChunkCutter& cutter() const { return cutter_; }
  // Why new words go to SentencePiece rather than BpeWord; "" if they do not.
  const std::string& bpe_off_reason() const { return bpe_off_; }

 private:
  WordCacheEncoder(const sentencepiece::SentencePieceProcessor& sp, ChunkCutter cutter);
  void encode_new_word(std::string_view word, std::vector<int32_t>& out) const;

  const sentencepiece::SentencePieceProcessor& sp_;
  ChunkCutter cutter_;
  std::optional<BpeWord> bpe_;
  std::string bpe_off_;
  uint64_t id_;  // distinguishes encoders in the thread-local cache slot
};

// SentencePiece's Encode of `text`, appended to out as int32 ids.
void sp_encode_append(const sentencepiece::SentencePieceProcessor& sp, std::string_view text, std::vector<int32_t>& out);

}  // namespace mt
