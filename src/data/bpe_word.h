// bpe_word.h — SentencePiece's BPE for one short word, re-implemented over
// integer merge tables, for the words the cache has not seen. SentencePiece
// spends microseconds per call on a short word (normaliser buffers, a heap of
// heap-allocated pairs, a string-keyed map per pair, a protobuf per token),
// and unseen words are the cost that remains once the cache hits.
//
// Same algorithm as sentencepiece::bpe::Model::SampleEncode with alpha 0
// (0.1.9x): one symbol per normalised character; repeatedly merge the adjacent
// pair whose concatenation is a piece with the highest score, the leftmost on
// ties; a final symbol that is no piece is unknown and, with byte fallback,
// becomes the byte pieces of its UTF-8 bytes. Every symbol is a single
// character or a piece, so a symbol is an integer "unit": the piece id, or a
// pseudo id for a character that occurs inside pieces without being one, and
// a merge is a table lookup on a pair of units. Words that involve a
// user-defined piece (matched and frozen by SentencePiece before BPE) are
// declined, as are models where a piece's string would map to a reserved id.
// Equality with SentencePiece is tested on megabytes of text
// (tests/unit/data_tokenizer_test.cpp) and self-checked at load.
#pragma once
#include <array>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "data/sp_model_info.h"

namespace mt {

class BpeWord {
 public:
  // Fails with the reason for models this does not cover; ChunkCutter's
  // conditions (BPE, identity normaliser, byte fallback) are assumed checked.
  static Result<BpeWord> from_model(const SpModelInfo& m);

  // Appends the ids of `word` and returns true, or returns false (nothing
  // appended) when the word must go to SentencePiece: it contains the first
  // byte of a user-defined piece, or has more than kMaxChars characters.
  bool encode(std::string_view word, std::vector<int32_t>& out) const;

  static constexpr int64_t kMaxChars = 256;  // merge search is quadratic in the word's length

 private:
  struct Merge {
    int32_t unit;  // piece id of the concatenation
    float score;
  };
  int32_t char_unit(uint32_t cp) const;
  const Merge* merge(int32_t left, int32_t right) const;

  std::array<int32_t, 128> ascii_unit_{};             // unit of each ASCII character (-1: occurs in no piece)
  std::unordered_map<uint32_t, int32_t> char_unit_;   // the same for other code points
  std::unordered_map<uint64_t, Merge> merges_;        // (left unit << 32 | right unit) -> merge
  std::array<int32_t, 256> byte_id_{};                // id of the byte piece <0xXX>
  std::array<bool, 256> declined_byte_{};             // first bytes of user-defined pieces (raw and normalised)
  int32_t n_pieces_ = 0;                              // units >= this are characters that are no piece
};

}  // namespace mt
