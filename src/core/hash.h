// hash.h — xxHash64 helpers for checksums (checkpoints) and parameter hashes.
#pragma once
#include <cstdint>
#include <string>

namespace mt {
uint64_t xxh64(const void* data, size_t bytes, uint64_t seed = 0);
std::string hex64(uint64_t h);

// Streaming hash for many buffers.
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  void update(const void* data, size_t bytes);
  uint64_t digest() const;

 private:
  void* state_;
};
}  // namespace mt
