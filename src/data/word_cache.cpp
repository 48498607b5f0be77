// word_cache.cpp — linear probing on the low hash bits; keys and ids live in
// two append-only arenas that clear() empties without freeing.
#include "data/word_cache.h"

#include <xxhash.h>

#include <cstring>

#include "core/check.h"

namespace mt {

WordCache::WordCache(int64_t max_entries) : max_entries_(max_entries) {
  MT_CHECK(max_entries > 0, "max_entries {}", max_entries);
  int64_t n = 1;
  while (n < 2 * max_entries) n *= 2;
  slots_.resize(size_t(n));
  const int64_t arena = max_entries * kArenaBytesPerEntry + kMaxWordBytes * 4;  // room for one maximal entry
  MT_CHECK(arena < (int64_t(1) << 32), "max_entries {} too large for 32-bit offsets", max_entries);
  keys_.reserve(size_t(arena));
  ids_.reserve(size_t(arena) / sizeof(int32_t));
}

int64_t WordCache::memory_bytes() const {
  return int64_t(slots_.capacity() * sizeof(Slot) + keys_.capacity() + ids_.capacity() * sizeof(int32_t));
}

uint64_t WordCache::hash(std::string_view word) { return XXH3_64bits(word.data(), word.size()); }

const int32_t* WordCache::find(std::string_view word, uint64_t h, int64_t& n) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = size_t(h) & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.key_len == 0) return nullptr;
    if (s.hash == h && s.key_len == word.size() && std::memcmp(keys_.data() + s.key_off, word.data(), word.size()) == 0) {
      n = s.n_ids;
      return ids_.data() + s.ids_off;
    }
  }
}

void WordCache::insert(std::string_view word, uint64_t h, const int32_t* ids, int64_t n) {
  MT_CHECK(!word.empty() && int64_t(word.size()) <= kMaxWordBytes && n <= kMaxIds, "word of {} bytes, {} ids",
           word.size(), n);
  // Clear rather than grow: the arenas never reallocate, so memory stays at
  // what the constructor allocated.
  if (size_ >= max_entries_ || keys_.size() + word.size() > keys_.capacity() ||
      ids_.size() + size_t(n) > ids_.capacity())
    clear();
  const size_t mask = slots_.size() - 1;
  size_t i = size_t(h) & mask;
  while (slots_[i].key_len != 0) i = (i + 1) & mask;
  Slot& s = slots_[i];
  s.hash = h;
  s.key_off = uint32_t(keys_.size());
  s.key_len = uint8_t(word.size());
  s.ids_off = uint32_t(ids_.size());
  s.n_ids = uint8_t(n);
  keys_.append(word);
  ids_.insert(ids_.end(), ids, ids + n);
  ++size_;
}

void WordCache::clear() {
  std::fill(slots_.begin(), slots_.end(), Slot());
  keys_.clear();
  ids_.clear();
  size_ = 0;
  ++clears_;
}

}  // namespace mt
