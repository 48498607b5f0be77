// chunk_cutter.h — where text may be cut so that SentencePiece encodes the
// parts one at a time to exactly the ids it gives the whole text. Used by
// word_cache_encoder.h, which encodes (and caches) one chunk at a time.
//
// Why a cut is exact (SentencePiece 0.1.9x, BPE). With the identity
// normaliser (no charsmap, no dummy prefix, no whitespace trimming) the text
// is mapped one character at a time: ' ' -> U+2581 "▁", a byte that is not
// valid UTF-8 -> U+FFFD, anything else to itself. BPE starts from one symbol
// per character (a user-defined piece is one frozen symbol) and repeatedly
// merges the adjacent pair of highest score, leftmost first, whose
// concatenation is a piece. So every symbol is a character or a piece. If no
// piece contains the two characters on either side of a cut next to each
// other, no symbol ever spans the cut and each side sees only its own merges,
// in the same order as when encoded alone (offsets shift by a constant, so
// leftmost-first ties keep their order). Byte fallback then rewrites each
// unknown symbol alone. The cut rule is therefore: the pair (left character,
// right character) occurs in no piece. The set of such pairs is computed from
// the model itself, so the rule holds for whatever the trainer produced.
//
// Cuts taken: before a space whose left neighbour is not "▁" (pieces only
// start with "▁" when the trainer splits by whitespace), on both sides of
// '\n' (a user-defined piece of its own in our tokenizer), and inside a chunk
// longer than kLongChunkBytes wherever the pair rule allows (digits under
// split_digits, script changes), so a line without spaces is not one huge
// BPE problem. Models for which a rule does not hold get no such cuts; models
// the argument does not cover at all (unigram, a normalisation charsmap,
// unused pieces whose resegmentation table is shared across the whole text,
// no byte fallback whose unknown runs merge across cuts) are refused.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/status.h"
#include "data/sp_model_info.h"

namespace mt {

class ChunkCutter {
 public:
  // Chunks longer than this are cut further with the pair rule (measured:
  // natural-language and code chunks are shorter; longer ones are rare blobs).
  static constexpr int64_t kLongChunkBytes = 64;

  // Fails with the reason when chunked encoding would not be exact for `m`.
  static Result<ChunkCutter> from_model(const SpModelInfo& m);

  // Appends consecutive, non-empty chunks whose concatenation is `text`.
  void split(std::string_view text, std::vector<std::string_view>& out) const;

  bool cuts_at_spaces() const { return space_cuts_; }
  bool cuts_at_newlines() const { return newline_cuts_; }

 private:
  void split_long(std::string_view chunk, std::vector<std::string_view>& out) const;
  bool pair_in_piece(uint32_t left, uint32_t right) const {
    return pairs_.count((uint64_t(left) << 32) | right) != 0;
  }

  std::unordered_set<uint64_t> pairs_;  // (left << 32 | right): adjacent code points inside some piece
  bool space_cuts_ = false;             // no piece has "▁" after another character
  bool newline_cuts_ = false;           // no piece has '\n' next to another character
};

// SentencePiece's decoding of the character at the start of `s` (non-empty):
// the code point and its length in bytes; a byte that does not start a valid
// UTF-8 sequence decodes as U+FFFD of length 1, as SentencePiece's
// normaliser replaces it. Exposed for tests.
uint32_t sp_decode_char(std::string_view s, int64_t& len);

}  // namespace mt
