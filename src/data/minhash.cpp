// minhash.cpp — shingling, the per-row hash family, band keys, FlatKeySet.
#include "data/minhash.h"

#include <cmath>
#include <limits>

#include "core/check.h"
#include "core/hash.h"

namespace mt {
namespace {

// splitmix64's finaliser: a bijective mixer, so h_i(x) = mix(x ^ salt_i) are
// independent-looking permutations of the shingle hashes.
inline uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

inline bool word_char(unsigned char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80; }

}  // namespace

std::vector<uint64_t> minhash_band_keys(std::string_view text, const MinHashOptions& opt) {
  // Word hashes (lower-cased ASCII; other bytes >= 0x80 belong to words, so
  // non-Latin scripts shingle too).
  std::vector<uint64_t> words;
  std::string w;
  for (size_t i = 0; i <= text.size(); ++i) {
    const unsigned char c = i < text.size() ? static_cast<unsigned char>(text[i]) : ' ';
    if (word_char(c)) {
      w.push_back(char(c >= 'A' && c <= 'Z' ? c + 32 : c));
    } else if (!w.empty()) {
      words.push_back(xxh64(w.data(), w.size(), 0));
      w.clear();
    }
  }
  if (words.empty()) return {};
  const int64_t k = opt.bands * opt.rows, n = int64_t(words.size());
  const int64_t g = std::min<int64_t>(opt.ngram, n);
  std::vector<uint64_t> salt(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) salt[size_t(i)] = mix(opt.seed * 0x9E3779B97F4A7C15ull + uint64_t(i) + 1);
  std::vector<uint64_t> mins(static_cast<size_t>(k), std::numeric_limits<uint64_t>::max());
  for (int64_t s = 0; s + g <= n; ++s) {
    uint64_t h = 0x84222325cbf29ce4ull;
    for (int64_t j = 0; j < g; ++j) h = mix(h ^ words[size_t(s + j)]);
    // One multiply per hash: x -> (x ^ salt) * odd, then an xor-shift, a
    // bijection of 64-bit words per salt (cheaper than the full mixer, which
    // made MinHash most of the ingest time).
    const uint64_t* sp = salt.data();
    uint64_t* mp = mins.data();
    for (int64_t i = 0; i < k; ++i) {
      uint64_t v = (h ^ sp[i]) * 0xD6E8FEB86659FD93ull;
      v ^= v >> 32;
      mp[i] = v < mp[i] ? v : mp[i];
    }
  }
  std::vector<uint64_t> keys(static_cast<size_t>(opt.bands));
  for (int64_t b = 0; b < opt.bands; ++b) {
    uint64_t h = mix(uint64_t(b) + 0x51ED27ull);
    for (int64_t r = 0; r < opt.rows; ++r) h = mix(h ^ mins[size_t(b * opt.rows + r)]);
    keys[size_t(b)] = h;
  }
  return keys;
}

double minhash_catch_probability(double j, const MinHashOptions& opt) {
  return 1.0 - std::pow(1.0 - std::pow(j, double(opt.rows)), double(opt.bands));
}

bool FlatKeySet::insert(uint64_t key) {
  if (key == 0) key = 0x9E3779B97F4A7C15ull;
  if (2 * (size_ + 1) > int64_t(slots_.size())) grow();
  const uint64_t mask = slots_.size() - 1;
  for (uint64_t i = mix(key) & mask;; i = (i + 1) & mask) {
    if (slots_[i] == key) return false;
    if (slots_[i] == 0) {
      slots_[i] = key;
      ++size_;
      return true;
    }
  }
}

bool FlatKeySet::contains(uint64_t key) const {
  if (key == 0) key = 0x9E3779B97F4A7C15ull;
  if (slots_.empty()) return false;
  const uint64_t mask = slots_.size() - 1;
  for (uint64_t i = mix(key) & mask;; i = (i + 1) & mask) {
    if (slots_[i] == key) return true;
    if (slots_[i] == 0) return false;
  }
}

void FlatKeySet::reserve(int64_t n) {
  size_t slots = 16;
  while (int64_t(slots) < 2 * n) slots *= 2;
  if (slots <= slots_.size()) return;
  std::vector<uint64_t> old = std::move(slots_);
  slots_.assign(slots, 0);
  size_ = 0;
  for (uint64_t k : old)
    if (k != 0) insert(k);
}

void FlatKeySet::grow() {
  std::vector<uint64_t> old = std::move(slots_);
  slots_.assign(std::max<size_t>(16, old.size() * 2), 0);
  size_ = 0;
  for (uint64_t k : old)
    if (k != 0) insert(k);
}

}  // namespace mt
