// minhash.h — near-duplicate detection with MinHash locality-sensitive
// hashing, the recipe of Broder (1997) as Dolma, DataTrove and Nemotron-CC
// run it: a document is the set of its word n-gram shingles (lower-cased
// words of letters and digits), summarised by `bands x rows` minima of
// independent hashes; two documents collide in a band when all `rows` minima
// of that band agree, which happens with probability J^rows for Jaccard
// similarity J. A document is a near duplicate when any band collides with
// an earlier document. With the defaults (5-grams, 14 bands of 8 rows, the
// FineWeb setting) a pair at J = 0.8 is caught with probability 0.92, at
// J = 0.75 with 0.77, at J = 0.5 with 0.05 and at J = 0.3 with 0.0009.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace mt {

struct MinHashOptions {
  int64_t ngram = 5;    // words per shingle
  int64_t bands = 14;   // LSH bands
  int64_t rows = 8;     // hashes per band
  uint64_t seed = 1;
};

// One key per band (bands of them): the band index and its rows' minima,
// hashed. A text with fewer than `ngram` words is one shingle of all of them;
// a text without words gets no keys (it can match nothing).
std::vector<uint64_t> minhash_band_keys(std::string_view text, const MinHashOptions& opt);

// P(at least one band collides) for two documents of Jaccard similarity j.
double minhash_catch_probability(double j, const MinHashOptions& opt);

// A set of 64-bit keys with open addressing: 16 bytes per key at most
// (load <= 1/2), so the near-duplicate index of a corpus costs
// 16 x bands bytes per document and nothing per byte of text.
class FlatKeySet {
 public:
  // True when the key was new.
  bool insert(uint64_t key);
  bool contains(uint64_t key) const;
  // Room for n keys without growing.
  void reserve(int64_t n);
  int64_t size() const { return size_; }
  int64_t bytes() const { return int64_t(slots_.size() * sizeof(uint64_t)); }

 private:
  void grow();
  std::vector<uint64_t> slots_;  // 0 = empty; key 0 is remapped
  int64_t size_ = 0;
};

}  // namespace mt
