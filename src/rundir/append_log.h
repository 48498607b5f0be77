// append_log.h — a log file that a run appends to and a resume rewrites
// (metrics.jsonl, the TensorBoard event file). open() writes the content to
// keep into a temporary file, syncs it and renames it over the log, so the
// previous log stays whole until the new one replaces it; appends then go to
// the same open file. Every operation goes through a FileSystem, so tests
// can fail any of them.
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "core/file_system.h"
#include "core/status.h"

namespace mt {

class AppendLog {
 public:
  static Result<std::unique_ptr<AppendLog>> open(const std::string& path, std::string_view kept, FileSystem& fs);
  // Writes all of `bytes` at the end (not synced: a crash may lose the last
  // appends, which the next resume drops anyway).
  Status append(std::string_view bytes);
  const std::string& path() const { return path_; }

 private:
  AppendLog(std::string path, std::unique_ptr<WritableFile> f) : path_(std::move(path)), file_(std::move(f)) {}
  std::string path_;
  std::unique_ptr<WritableFile> file_;
};

}  // namespace mt
