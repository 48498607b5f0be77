// file_lock.h — an exclusive flock(2) on a lock file, held while the object
// lives: processes that share an output directory (a Slurm job array's
// tasks, `ladder run --rung`) take turns at the read-modify-write of a file
// they all append to. flock is advisory and per open file, so it also works
// between processes on different hosts of a file system that supports it
// (local, NFSv4, Lustre mounted with -o flock).
#pragma once
#include <string>

#include "core/status.h"

namespace mt {

class FileLock {
 public:
  // Creates `path` if needed and blocks until the lock is ours.
  static Result<FileLock> acquire(const std::string& path);
  FileLock(FileLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  FileLock& operator=(FileLock&& o) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace mt
