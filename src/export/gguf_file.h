// gguf_file.h — the GGUF container llama.cpp reads (version 3): a header,
// typed key-value metadata, tensor infos and the tensor data, each tensor
// aligned to general.alignment (32). Written by the project from the format's
// specification (ggml's docs/gguf.md), not by llama.cpp's tools. Tensors are
// given row-major with fp32 values and stored as F32, F16, BF16 (both
// rounded to nearest even) or Q8_0 (blocks of 32 values along the innermost
// dimension: an fp16 scale amax/127 and 32 int8 values round(x / scale)).
// GGUF lists dimensions innermost first, so a row-major (rows, cols) matrix
// is written as ne = [cols, rows]. The reader is for tests and import:
// it dequantizes every type back to fp32.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "core/file_system.h"
#include "core/status.h"

namespace mt {

enum class GgmlType : uint32_t { kF32 = 0, kF16 = 1, kQ8_0 = 8, kBf16 = 30 };
const char* ggml_type_name(GgmlType t);

// A metadata value: the scalar and array types an export needs.
using GgufValue = std::variant<uint32_t, int32_t, uint64_t, float, bool, std::string, std::vector<std::string>,
                               std::vector<float>, std::vector<int32_t>>;

struct GgufTensor {
  std::string name;
  std::vector<int64_t> shape;  // row-major (outermost first), as moetrain's tensors
  GgmlType type = GgmlType::kF32;
  std::vector<float> data;  // fp32 values (written: converted to `type`; read: dequantized)
};

struct GgufFile {
  std::vector<std::pair<std::string, GgufValue>> metadata;  // in file order
  std::vector<GgufTensor> tensors;                          // in file order
  const GgufValue* find(const std::string& key) const;
};

// Bytes `n` values of `type` take (Q8_0: n / 32 blocks of 34 bytes).
int64_t ggml_bytes(GgmlType type, int64_t n);

// Refuses a Q8_0 tensor whose innermost dimension is not a multiple of 32,
// duplicate keys or tensor names, and a shape that does not match the data;
// writes atomically (a failed write keeps the file it would have replaced).
Status write_gguf(const std::string& path, const GgufFile& f, FileSystem& fs = default_file_system());

// Reads a GGUF v3 file; errors name the file and what is malformed.
Result<GgufFile> read_gguf(const std::string& path);

// One Q8_0 block: 32 values to the scale and the int8 values, and back.
struct Q8Block {
  uint16_t scale_f16;
  int8_t q[32];
};
Q8Block quantize_q8_0(const float* x);
void dequantize_q8_0(const Q8Block& b, float* out);

}  // namespace mt
