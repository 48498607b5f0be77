// hash.cpp — thin wrapper over libxxhash.
#include "core/hash.h"

#include <fmt/format.h>
#include <xxhash.h>

namespace mt {
uint64_t xxh64(const void* data, size_t bytes, uint64_t seed) { return XXH64(data, bytes, seed); }
std::string hex64(uint64_t h) { return fmt::format("{:016x}", h); }

Hasher::Hasher() : state_(XXH64_createState()) { XXH64_reset(static_cast<XXH64_state_t*>(state_), 0); }
Hasher::~Hasher() { XXH64_freeState(static_cast<XXH64_state_t*>(state_)); }
void Hasher::update(const void* data, size_t bytes) {
  XXH64_update(static_cast<XXH64_state_t*>(state_), data, bytes);
}
uint64_t Hasher::digest() const { return XXH64_digest(static_cast<XXH64_state_t*>(state_)); }
}  // namespace mt
