// text_normalize.cpp — a table-free UTF-8 validator (RFC 3629 ranges) and the
// normalisation pass.
#include "data/text_normalize.h"

namespace mt {
namespace {

// Length of the well-formed sequence starting at s[i], or 0 if ill-formed.
int utf8_len(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  auto cont = [&](size_t k, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    if (i + k >= s.size()) return false;
    const unsigned char x = static_cast<unsigned char>(s[i + k]);
    return x >= lo && x <= hi;
  };
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;  // no surrogates
  if (c == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

}  // namespace

int64_t find_invalid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    // Fast path over ASCII, 8 bytes at a time.
    while (i + 8 <= s.size()) {
      uint64_t w;
      __builtin_memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= s.size()) break;
    const int n = utf8_len(s, i);
    if (n == 0) return int64_t(i);
    i += size_t(n);
  }
  return -1;
}

int64_t repair_utf8(std::string& s) {
  if (find_invalid_utf8(s) < 0) return 0;
  std::string out;
  out.reserve(s.size() + 16);
  int64_t replaced = 0;
  size_t i = 0;
  while (i < s.size()) {
    const int n = utf8_len(s, i);
    if (n > 0) {
      out.append(s, i, size_t(n));
      i += size_t(n);
      continue;
    }
    out += "\xEF\xBF\xBD";
    ++replaced;
    ++i;
    while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;  // maximal subpart
  }
  s = std::move(out);
  return replaced;
}

void normalize_text(std::string& s) {
  size_t start = s.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  size_t w = 0;
  for (size_t r = start; r < s.size(); ++r) {
    char c = s[r];
    if (c == '\0') continue;
    if (c == '\r') {
      if (r + 1 < s.size() && s[r + 1] == '\n') continue;
      c = '\n';
    }
    s[w++] = c;
  }
  s.resize(w);
}

bool is_blank(std::string_view s) {
  for (char c : s)
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v') return false;
  return true;
}

}  // namespace mt
