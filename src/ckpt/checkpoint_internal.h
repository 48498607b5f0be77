// checkpoint_internal.h — helpers shared by checkpoint.cpp (writing) and
// checkpoint_read.cpp (verifying, reading). Not part of the public API.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "core/file_system.h"
#include "ckpt/manifest.h"
#include "core/hash.h"
#include "core/status.h"

namespace mt::ckpt_internal {

inline constexpr const char* kStagingPrefix = ".tmp-";  // uncommitted; readers ignore, writers clean

std::string join_path(const std::string& dir, const std::string& name);

// Parses "step_" followed by 8 to 18 digits; false for anything else.
bool parse_step_dir_name(const std::string& name, int64_t* step);

std::string shape_str(const std::vector<int64_t>& shape);

// Feeds one tensor into the streaming tensor_hash: name, a 0 byte, data.
void hash_tensor_name(Hasher& all, const std::string& name);

// Calls f(floats, n) over the first `count` values of view `v`, in order:
// its own floats in one call, or bf16 values widened chunk by chunk.
template <typename F>
void for_each_f32_chunk(const TensorView& v, int64_t count, F&& f) {
  if (v.data_bf16 == nullptr) {
    f(v.data, count);
    return;
  }
  constexpr int64_t kChunk = 1 << 14;
  float buf[kChunk];
  for (int64_t at = 0; at < count; at += kChunk) {
    const int64_t n = std::min(kChunk, count - at);
    for (int64_t j = 0; j < n; ++j) buf[j] = bf16_to_f32(v.data_bf16[at + j]);
    f(buf, n);
  }
}

struct StoredHashes {
  uint64_t tensor_hash = 0;
  std::vector<uint64_t> per_tensor;  // parallel to Manifest::tensors
};

// Reads every piece of every tensor of `m` from the files in `dir`, in tensor
// order, checking file sizes and piece checksums; returns the whole-tensor
// hashes. Used by commit (to fill the manifest) and verify (to check it).
Result<StoredHashes> hash_stored_tensors(FileSystem& fs, const std::string& dir, const Manifest& m);

}  // namespace mt::ckpt_internal
