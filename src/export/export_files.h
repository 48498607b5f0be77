// export_files.h — what every export writer shares: a file's path in the
// export directory, and a JSON file written atomically (two-space indent,
// as transformers writes its own).
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "core/file_io.h"
#include "core/file_system.h"

namespace mt {

inline std::string path_in(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / name).string();
}

inline Status write_json(const std::string& path, const nlohmann::json& j, FileSystem& fs = default_file_system()) {
  return write_file_atomic(path, j.dump(2) + "\n", fs);
}

}  // namespace mt
