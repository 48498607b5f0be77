// safetensors.h — the safetensors container: an 8-byte little-endian header
// length N, N bytes of JSON {name: {dtype, shape, data_offsets}, "__metadata__":
// {str: str}}, then the data section. Encoding and strict header parsing only;
// checkpoint.cpp decides what goes in the file.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/file_system.h"
#include "core/status.h"

namespace mt {

struct SafetensorsEntry {
  std::string name;
  std::string dtype;            // "F32", "BF16", ...
  std::vector<int64_t> shape;
  int64_t begin = 0;            // data_offsets[0]: bytes from the start of the data section
  int64_t end = 0;              // data_offsets[1], exclusive
};

struct SafetensorsHeader {
  std::string raw;              // the first data_start bytes of the file, verbatim
  int64_t data_start = 0;       // 8 + N: file offset of the data section
  std::vector<SafetensorsEntry> entries;  // sorted by begin
  std::map<std::string, std::string> metadata;
};

// Bytes per element of a safetensors dtype; 0 for dtypes we do not know.
int64_t safetensors_dtype_bytes(const std::string& dtype);

// The first data_start bytes of a file holding `entries` (whose offsets the
// caller has laid out back to back from 0). The JSON is padded with spaces so
// the data section starts 8-byte aligned.
std::string encode_safetensors_header(const std::vector<SafetensorsEntry>& entries,
                                      const std::map<std::string, std::string>& metadata);

// Reads and validates the header of `file` (called `path` in messages): sane
// length, JSON object, known dtypes, non-negative shapes, data_offsets whose
// size matches shape x dtype, and a data section covered without holes or
// overlaps up to exactly the end of the file.
Result<SafetensorsHeader> read_safetensors_header(ReadableFile& file, const std::string& path);

}  // namespace mt
