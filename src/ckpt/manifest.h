// manifest.h — the in-memory form of a checkpoint's manifest.json and its
// JSON encoding. decode_manifest() checks everything that can be checked
// without the tensor files (see docs/checkpoint-format.md "Validation").
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace mt {

inline constexpr int64_t kCheckpointFormatVersion = 1;
inline constexpr const char* kCheckpointFormatName = "moetrain-checkpoint";
inline constexpr const char* kManifestFileName = "manifest.json";

// A contiguous range of a flattened tensor stored in one file.
struct ManifestPiece {
  std::string file;         // file name inside the checkpoint directory
  int64_t offset = 0;       // first element, into the flattened global tensor
  int64_t count = 0;        // elements
  int64_t byte_begin = 0;   // absolute byte range of the data inside `file`
  int64_t byte_end = 0;
  uint64_t xxh64 = 0;       // of the piece's bytes
};

struct ManifestTensor {
  std::string name;               // global name
  std::string dtype = "F32";
  std::vector<int64_t> shape;     // global shape
  int64_t numel = 0;
  uint64_t xxh64 = 0;             // of the whole tensor's bytes, whatever the layout
  std::vector<ManifestPiece> pieces;  // sorted by offset, covering [0, numel) exactly
};

struct ManifestFile {
  std::string name;   // e.g. "rank_00000.safetensors"
  int64_t rank = 0;   // the rank that wrote it
  int64_t bytes = 0;
  uint64_t xxh64 = 0; // of the whole file
};

struct Manifest {
  int64_t format_version = kCheckpointFormatVersion;
  int64_t step = 0;
  int64_t world_size = 1;
  std::string config_toml;
  nlohmann::json state = nlohmann::json::object();
  uint64_t tensor_hash = 0;
  std::vector<ManifestFile> files;      // one per rank, by rank
  std::vector<ManifestTensor> tensors;  // sorted by name
};

// Bytes per element of the dtypes the checkpoint layer stores; 0 otherwise.
int64_t checkpoint_dtype_bytes(const std::string& dtype);

// Checks the cross-field rules (ranks, file names, sorted unique tensor names,
// numel = prod(shape), piece coverage, byte ranges). `where` prefixes messages.
Status validate_manifest(const Manifest& m, const std::string& where);

// JSON text with a trailing "manifest_xxh64" over the rest; fails (instead of
// throwing) when config or state hold invalid UTF-8.
Result<std::string> encode_manifest(const Manifest& m);

// Parses, checks manifest_xxh64, types and validate_manifest(); `path` names
// the file in messages.
Result<Manifest> decode_manifest(const std::string& text, const std::string& path);

// "0123456789abcdef" <-> uint64; parse fails unless exactly 16 lowercase hex digits.
bool parse_hex64(const std::string& s, uint64_t* out);

}  // namespace mt
