// file_system.h — the file operations of durable writes (checkpoints, the
// run directory's logs, atomic whole-file writes), behind an interface so
// tests can inject failures (a write that dies after K bytes, a rename that
// fails). default_file_system() is the POSIX implementation.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace mt {

// A file opened for writing from its start. append() either writes all bytes
// or returns an error (some of them may have reached the file). Nothing is
// durable before sync() returns ok. The destructor closes without reporting.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status append(const void* data, int64_t bytes) = 0;
  // Overwrites bytes already written, at `offset` (a header written last).
  virtual Status write_at(int64_t offset, const void* data, int64_t bytes) = 0;
  virtual Status sync() = 0;   // fsync: data and metadata are on disk
  virtual Status close() = 0;  // reports errors the kernel deferred to close
};

// A file opened for positional reads. read_at() fills all `bytes` or returns
// an error (reading past the end is an error naming the file).
class ReadableFile {
 public:
  virtual ~ReadableFile() = default;
  virtual int64_t size() const = 0;  // at open time
  virtual Status read_at(int64_t offset, void* dst, int64_t bytes) = 0;
};

// Every operation names the path in its error message.
class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Creates or truncates `path`.
  virtual Result<std::unique_ptr<WritableFile>> new_writable_file(const std::string& path) = 0;
  // Creates `path` if needed; every append goes to its end (logs).
  virtual Result<std::unique_ptr<WritableFile>> new_appendable_file(const std::string& path) = 0;
  virtual Result<std::unique_ptr<ReadableFile>> open_readable_file(const std::string& path) = 0;
  // Creates `path` and any missing parents; ok if it already is a directory.
  virtual Status create_dirs(const std::string& path) = 0;
  // fsync on a directory, so that entries created or renamed in it persist.
  virtual Status sync_dir(const std::string& path) = 0;
  // POSIX rename(2): atomic; `to` must not be a non-empty directory.
  virtual Status rename(const std::string& from, const std::string& to) = 0;
  // Removes a file or a directory tree; ok if `path` does not exist.
  virtual Status remove_all(const std::string& path) = 0;
  // Entry names (not paths) in `path`, without "." and "..", in no order.
  virtual Result<std::vector<std::string>> list_dir(const std::string& path) = 0;
  virtual bool exists(const std::string& path) = 0;
};

// Process-wide POSIX implementation; never null, never destroyed.
FileSystem& default_file_system();

}  // namespace mt
