// file_io.h — whole-file reads for configs, data and models, with errors that
// name the file (every loader used to carry its own copy of this).
#pragma once
#include <functional>
#include <string>

#include "core/file_system.h"
#include "core/status.h"

namespace mt {

// The bytes of `path`. `what` names the file's role in the message
// ("config file" -> "x.toml: cannot open config file").
Result<std::string> read_file(const std::string& path, const std::string& what = "file");

// How far write_file_atomic goes: kDurable fsyncs the file and the directory
// (configs, manifests: a crash keeps the old file or the new one);
// kAtomicOnly only renames (heartbeats, rewritten every step: readers never
// see a torn file, and a crash may lose the last one).
enum class WriteDurability { kDurable, kAtomicOnly };

// Writes `content` to path.tmp-PID and renames it over `path`: readers see
// the old file or the new one, never a torn one, and a failed write leaves
// the old file as it was (and no temporary). Errors name the file.
Status write_file_atomic(const std::string& path, const std::string& content,
                         FileSystem& fs = default_file_system(),
                         WriteDurability durability = WriteDurability::kDurable);
// The same for content too large to hold in one string: `write` appends it
// to the temporary file (model weights, shards of an export).
Status write_file_atomic(const std::string& path, const std::function<Status(WritableFile&)>& write,
                         FileSystem& fs = default_file_system(),
                         WriteDurability durability = WriteDurability::kDurable);

}  // namespace mt
