// checkpoint_internal.h — helpers shared by checkpoint.cpp (writing) and
// checkpoint_read.cpp (verifying, reading). Not part of the public API.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ckpt/file_system.h"
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

struct StoredHashes {
  uint64_t tensor_hash = 0;
  std::vector<uint64_t> per_tensor;  // parallel to Manifest::tensors
};

// Reads every piece of every tensor of `m` from the files in `dir`, in tensor
// order, checking file sizes and piece checksums; returns the whole-tensor
// hashes. Used by commit (to fill the manifest) and verify (to check it).
Result<StoredHashes> hash_stored_tensors(FileSystem& fs, const std::string& dir, const Manifest& m);

}  // namespace mt::ckpt_internal
