// word_cache.h — a bounded map from a text chunk (a "word") to its token ids,
// one per encoding thread (word_cache_encoder.h). Open addressing over flat
// arrays: a hit costs one hash and one memcmp, and inserting never allocates
// per entry. When full it is cleared, not evicted piecemeal: the
// frequent words come back within a few kilobytes of text, and clearing keeps
// the memory bound exact.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mt {

class WordCache {
 public:
  // Holds at most max_entries words of at most kMaxWordBytes bytes and
  // kMaxIds ids each, and at most kArenaBytesPerEntry * max_entries bytes of
  // keys and as many of ids (real text averages ~8 key bytes and ~3 ids a
  // word). All memory is allocated here and never grows: 48 bytes of table
  // (load <= 1/2) + 32 of arenas = 80 bytes per entry.
  static constexpr int64_t kMaxWordBytes = 255;
  static constexpr int64_t kMaxIds = 255;
  static constexpr int64_t kArenaBytesPerEntry = 16;
  explicit WordCache(int64_t max_entries);
  // Bytes held by the table and arenas.
  int64_t memory_bytes() const;

  // The ids of `word` (hash h = hash(word)), or nullptr; n is set on a hit.
  const int32_t* find(std::string_view word, uint64_t h, int64_t& n) const;
  // Adds word -> ids (neither already present nor over the limits); clears
  // the cache first when it is full.
  void insert(std::string_view word, uint64_t h, const int32_t* ids, int64_t n);
  void clear();

  int64_t size() const { return size_; }
  int64_t clears() const { return clears_; }
  static uint64_t hash(std::string_view word);

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t key_off = 0;
    uint32_t ids_off = 0;
    uint8_t key_len = 0;  // 0 = empty slot (words are never empty)
    uint8_t n_ids = 0;
  };
  int64_t max_entries_;
  int64_t size_ = 0;
  int64_t clears_ = 0;
  std::vector<Slot> slots_;  // power of two, >= 2 * max_entries
  std::string keys_;         // key bytes of all entries, back to back
  std::vector<int32_t> ids_; // ids of all entries, back to back
};

}  // namespace mt
