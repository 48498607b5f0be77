// chunk_cutter.cpp — the pair set from the model's pieces, and the splitting
// loop (a byte scan for spaces and newlines; code points only in long chunks).
#include "data/chunk_cutter.h"

namespace mt {
namespace {

constexpr uint32_t kSpaceSymbol = 0x2581;  // "▁", what the normaliser writes for ' '
constexpr uint32_t kReplacement = 0xFFFD;

bool is_trail(uint8_t c) { return (c & 0xC0) == 0x80; }
bool valid_code_point(uint32_t c) { return c < 0xD800 || (c >= 0xE000 && c <= 0x10FFFF); }

// The normalised character for raw code point c (identity normaliser).
uint32_t normalised(uint32_t c) { return c == ' ' ? kSpaceSymbol : c; }

// True when the character ending at text[i] (exclusive) is "▁" after
// normalisation: a space, or a literal U+2581 (E2 96 81; E2 never continues a
// sequence, so these three bytes always decode as one character).
bool space_symbol_before(std::string_view text, size_t i) {
  if (i >= 1 && text[i - 1] == ' ') return true;
  return i >= 3 && uint8_t(text[i - 3]) == 0xE2 && uint8_t(text[i - 2]) == 0x96 && uint8_t(text[i - 1]) == 0x81;
}

}  // namespace

uint32_t sp_decode_char(std::string_view s, int64_t& len) {
  const auto* b = reinterpret_cast<const uint8_t*>(s.data());
  const size_t n = s.size();
  len = 1;
  if (b[0] < 0x80) return b[0];
  // Same acceptance as SentencePiece's DecodeUTF8: right lead-byte mask, trail
  // bytes, no overlong form, no surrogate, at most U+10FFFF.
  if ((b[0] & 0xE0) == 0xC0 && n >= 2 && is_trail(b[1])) {
    const uint32_t c = (uint32_t(b[0] & 0x1F) << 6) | (b[1] & 0x3F);
    if (c >= 0x80) return len = 2, c;
  } else if ((b[0] & 0xF0) == 0xE0 && n >= 3 && is_trail(b[1]) && is_trail(b[2])) {
    const uint32_t c = (uint32_t(b[0] & 0x0F) << 12) | (uint32_t(b[1] & 0x3F) << 6) | (b[2] & 0x3F);
    if (c >= 0x800 && valid_code_point(c)) return len = 3, c;
  } else if ((b[0] & 0xF8) == 0xF0 && n >= 4 && is_trail(b[1]) && is_trail(b[2]) && is_trail(b[3])) {
    const uint32_t c = (uint32_t(b[0] & 0x07) << 18) | (uint32_t(b[1] & 0x3F) << 12) |
                       (uint32_t(b[2] & 0x3F) << 6) | (b[3] & 0x3F);
    if (c >= 0x10000 && valid_code_point(c)) return len = 4, c;
  }
  return kReplacement;
}

Result<ChunkCutter> ChunkCutter::from_model(const SpModelInfo& m) {
  if (m.model_type != SpModelType::kBpe) return Status::error("not a BPE model");
  if (m.charsmap_bytes != 0) return Status::errorf("normaliser '{}' rewrites text", m.normalizer_name);
  if (m.add_dummy_prefix) return Status::error("add_dummy_prefix is on");
  if (m.remove_extra_whitespaces) return Status::error("remove_extra_whitespaces is on");
  if (!m.escape_whitespaces) return Status::error("escape_whitespaces is off");
  if (!m.byte_fallback) return Status::error("byte_fallback is off (unknown runs merge across chunks)");
  ChunkCutter c;
  for (const SpPieceInfo& p : m.pieces) {
    if (p.type == SpPieceType::kUnused) return Status::errorf("piece '{}' is unused (resegmented from a table shared by the whole text)", p.piece);
    // Only these piece types take part in BPE merges and user-defined matches.
    if (p.type != SpPieceType::kNormal && p.type != SpPieceType::kUserDefined) continue;
    std::string_view s = p.piece;
    uint32_t prev = 0;
    bool first = true;
    while (!s.empty()) {
      int64_t len = 0;
      const uint32_t cp = sp_decode_char(s, len);
      if (cp == kReplacement && len == 1 && uint8_t(s[0]) >= 0x80)
        return Status::errorf("piece '{}' is not valid UTF-8", p.piece);
      if (!first) c.pairs_.insert((uint64_t(prev) << 32) | cp);
      prev = cp;
      first = false;
      s.remove_prefix(size_t(len));
    }
  }
  c.space_cuts_ = true;
  c.newline_cuts_ = true;
  for (uint64_t pair : c.pairs_) {
    const uint32_t l = uint32_t(pair >> 32), r = uint32_t(pair);
    if (r == kSpaceSymbol && l != kSpaceSymbol) c.space_cuts_ = false;
    if (l == '\n' || r == '\n') c.newline_cuts_ = false;
  }
  return c;
}

void ChunkCutter::split(std::string_view text, std::vector<std::string_view>& out) const {
  auto emit = [&](size_t b, size_t e) {
    if (e <= b) return;
    if (int64_t(e - b) > kLongChunkBytes)
      split_long(text.substr(b, e - b), out);
    else
      out.push_back(text.substr(b, e - b));
  };
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' && space_cuts_) {
      if (i > start && !space_symbol_before(text, i)) {
        emit(start, i);
        start = i;
      }
    } else if (c == '\n' && newline_cuts_) {
      emit(start, i);
      emit(i, i + 1);
      start = i + 1;
    }
  }
  emit(start, text.size());
}

void ChunkCutter::split_long(std::string_view chunk, std::vector<std::string_view>& out) const {
  size_t start = 0, i = 0;
  uint32_t prev = 0;
  while (i < chunk.size()) {
    int64_t len = 0;
    const uint32_t cp = normalised(sp_decode_char(chunk.substr(i), len));
    if (i > 0 && !pair_in_piece(prev, cp)) {
      out.push_back(chunk.substr(start, i - start));
      start = i;
    }
    prev = cp;
    i += size_t(len);
  }
  out.push_back(chunk.substr(start));
}

}  // namespace mt
