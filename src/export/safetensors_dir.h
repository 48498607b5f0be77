// safetensors_dir.h — a model directory of safetensors files, as Hugging
// Face tools read it: one model.safetensors, or shards
// model-0000i-of-0000N.safetensors and model.safetensors.index.json; tensors
// written as F32 or BF16 (rounded to nearest even), read back from F32 or
// BF16 as fp32 (exactly). Each file is written atomically.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/file_system.h"
#include "core/status.h"
#include "export/named_tensor.h"

namespace mt {

enum class TensorDtype { kF32, kBf16 };
// "F32" or "BF16" (safetensors' names); 4 or 2.
const char* dtype_name(TensorDtype d);
int64_t dtype_bytes(TensorDtype d);

inline constexpr const char* kSafetensorsIndexFile = "model.safetensors.index.json";

// Writes `tensors` as one model.safetensors, or shards of at most
// max_shard_bytes of data (a bigger tensor gets a shard of its own) plus
// the index; `metadata` goes into every shard's header (with "format":
// "pt"). Each file is written atomically (temporary name, fsync, rename): a
// failed write keeps the file it would have replaced. Returns the files
// written.
Result<std::vector<std::string>> write_safetensors_shards(
    const std::string& dir, const std::vector<NamedTensor>& tensors, const std::map<std::string, std::string>& metadata,
    int64_t max_shard_bytes, TensorDtype dtype = TensorDtype::kF32, FileSystem& file_system = default_file_system());

// Reads model.safetensors or every shard named by the index in `dir`:
// tensors (F32 or BF16, as fp32) and the first shard's metadata.
struct SafetensorsModel {
  std::map<std::string, NamedTensor> tensors;
  std::map<std::string, std::string> metadata;
};
Result<SafetensorsModel> read_safetensors_model(const std::string& dir);

}  // namespace mt
