// bpe_word.cpp — the unit and merge tables from the pieces, and the merge
// loop over a small array with each adjacent pair's best merge kept up to date.
#include "data/bpe_word.h"

#include <cstdio>
#include <string>
#include <unordered_set>

#include "data/chunk_cutter.h"

namespace mt {
namespace {

constexpr uint32_t kSpaceSymbol = 0x2581;

void append_utf8(uint32_t c, std::string& s) {
  if (c < 0x80) {
    s += char(c);
  } else if (c < 0x800) {
    s += char(0xC0 | (c >> 6));
    s += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    s += char(0xE0 | (c >> 12));
    s += char(0x80 | ((c >> 6) & 0x3F));
    s += char(0x80 | (c & 0x3F));
  } else {
    s += char(0xF0 | (c >> 18));
    s += char(0x80 | ((c >> 12) & 0x3F));
    s += char(0x80 | ((c >> 6) & 0x3F));
    s += char(0x80 | (c & 0x3F));
  }
}

// Code points of a valid UTF-8 string (ChunkCutter::from_model has checked
// that every piece is valid).
std::vector<uint32_t> code_points(std::string_view s) {
  std::vector<uint32_t> v;
  while (!s.empty()) {
    int64_t len = 0;
    v.push_back(sp_decode_char(s, len));
    s.remove_prefix(size_t(len));
  }
  return v;
}

}  // namespace

Result<BpeWord> BpeWord::from_model(const SpModelInfo& m) {
  BpeWord b;
  b.n_pieces_ = int32_t(m.pieces.size());
  std::unordered_map<std::string_view, int32_t> piece_id;  // pieces that take part in merges
  std::unordered_set<std::string_view> reserved;
  b.byte_id_.fill(-1);
  for (int32_t id = 0; id < b.n_pieces_; ++id) {
    const SpPieceInfo& p = m.pieces[size_t(id)];
    if (p.type == SpPieceType::kNormal || p.type == SpPieceType::kUserDefined) {
      piece_id.emplace(p.piece, id);
    } else {
      reserved.insert(p.piece);
      unsigned byte = 0;
      char tail = 0;
      if (p.type == SpPieceType::kByte && std::sscanf(p.piece.c_str(), "<0x%2X>%c", &byte, &tail) == 1 && byte < 256)
        b.byte_id_[byte] = id;
    }
    if (p.type == SpPieceType::kUserDefined) {
      b.declined_byte_[uint8_t(p.piece[0])] = true;
      if (p.piece.rfind("\xE2\x96\x81", 0) == 0) b.declined_byte_[' '] = true;
    }
  }
  for (int c = 0; c < 256; ++c)
    if (b.byte_id_[c] < 0) return Status::errorf("no byte piece <0x{:02X}>", c);
  for (auto [s, id] : piece_id)
    if (reserved.count(s)) return Status::errorf("piece '{}' is both a reserved and a normal piece", s);
  for (std::string_view s : reserved)
    if (code_points(s).size() == 1) return Status::errorf("reserved piece '{}' is a single character", s);

  // Units: a piece's id, or a pseudo id for a character inside pieces.
  b.ascii_unit_.fill(-1);
  int32_t next_pseudo = b.n_pieces_;
  std::unordered_map<uint32_t, int32_t> units;
  for (auto [s, id] : piece_id) {
    for (uint32_t c : code_points(s)) {
      if (units.count(c)) continue;
      std::string one;
      append_utf8(c, one);
      auto it = piece_id.find(one);
      units[c] = it != piece_id.end() ? it->second : next_pseudo++;
    }
  }
  for (auto [c, u] : units) {
    if (c < 128)
      b.ascii_unit_[c] = u;
    else
      b.char_unit_[c] = u;
  }
  // Merges: every split of every piece at a character boundary whose halves
  // can both be symbols (a piece, or one character).
  for (auto [s, id] : piece_id) {
    const std::vector<uint32_t> cps = code_points(s);
    size_t off = 0;
    for (size_t k = 1; k < cps.size(); ++k) {
      std::string first;
      append_utf8(cps[k - 1], first);
      off += first.size();
      auto unit_of = [&](std::string_view half, uint32_t single) -> int32_t {
        auto it = piece_id.find(half);
        if (it != piece_id.end()) return it->second;
        return code_points(half).size() == 1 ? units.at(single) : -1;
      };
      const int32_t l = unit_of(s.substr(0, off), cps[0]);
      const int32_t r = unit_of(s.substr(off), cps[k]);
      if (l >= 0 && r >= 0) b.merges_[(uint64_t(uint32_t(l)) << 32) | uint32_t(r)] = {id, m.pieces[size_t(id)].score};
    }
  }
  return b;
}

int32_t BpeWord::char_unit(uint32_t cp) const {
  if (cp < 128) return ascii_unit_[cp];
  auto it = char_unit_.find(cp);
  return it == char_unit_.end() ? -1 : it->second;
}

const BpeWord::Merge* BpeWord::merge(int32_t left, int32_t right) const {
  if (left < 0 || right < 0) return nullptr;
  auto it = merges_.find((uint64_t(uint32_t(left)) << 32) | uint32_t(right));
  return it == merges_.end() ? nullptr : &it->second;
}

bool BpeWord::encode(std::string_view word, std::vector<int32_t>& out) const {
  struct Sym {
    int32_t unit;  // -1: a character in no piece
    uint32_t cp;   // the normalised character while unmerged
  };
  Sym syms[kMaxChars];
  const Merge* pair[kMaxChars];  // pair[i]: merge of syms[i] and syms[i + 1], or null
  int64_t n = 0;
  for (size_t i = 0; i < word.size();) {
    if (declined_byte_[uint8_t(word[i])] || n == kMaxChars) return false;
    int64_t len = 0;
    uint32_t cp = sp_decode_char(word.substr(i), len);
    if (cp == ' ') cp = kSpaceSymbol;
    syms[n++] = {char_unit(cp), cp};
    i += size_t(len);
  }
  for (int64_t i = 0; i + 1 < n; ++i) pair[i] = merge(syms[i].unit, syms[i + 1].unit);
  for (;;) {
    int64_t best = -1;
    for (int64_t i = 0; i + 1 < n; ++i)
      if (pair[i] && (best < 0 || pair[i]->score > pair[best]->score)) best = i;  // strict: leftmost wins ties
    if (best < 0) break;
    syms[best].unit = pair[best]->unit;
    for (int64_t i = best + 1; i + 1 < n; ++i) syms[i] = syms[i + 1];
    for (int64_t i = best + 1; i + 2 < n; ++i) pair[i] = pair[i + 1];
    --n;
    if (best > 0) pair[best - 1] = merge(syms[best - 1].unit, syms[best].unit);
    if (best + 1 < n) pair[best] = merge(syms[best].unit, syms[best + 1].unit);
  }
  for (int64_t i = 0; i < n; ++i) {
    if (syms[i].unit >= 0 && syms[i].unit < n_pieces_) {
      out.push_back(syms[i].unit);
      continue;
    }
    std::string bytes;  // unknown: byte fallback over its normalised UTF-8
    append_utf8(syms[i].cp, bytes);
    for (char c : bytes) out.push_back(byte_id_[uint8_t(c)]);
  }
  return true;
}

}  // namespace mt
