// file_system.cpp — POSIX FileSystem: open/write/pread/fsync/rename, with
// EINTR and short writes handled and errno turned into messages naming paths.
#include "core/file_system.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace mt {
namespace {

Status errno_status(const char* what, const std::string& path, int err) {
  return Status::errorf("{}: {} failed: {}", path, what, std::strerror(err));
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status append(const void* data, int64_t bytes) override {
    if (fd_ < 0) return Status::errorf("{}: write after close", path_);
    const char* p = static_cast<const char*>(data);
    while (bytes > 0) {
      // Linux caps a single write at ~2 GiB; stay well below.
      const size_t chunk = static_cast<size_t>(std::min<int64_t>(bytes, int64_t{1} << 30));
      const ssize_t n = ::write(fd_, p, chunk);
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno_status("write", path_, errno);
      }
      p += n;
      bytes -= n;
    }
    return Status::ok();
  }

  Status write_at(int64_t offset, const void* data, int64_t bytes) override {
    if (fd_ < 0) return Status::errorf("{}: write after close", path_);
    const char* p = static_cast<const char*>(data);
    while (bytes > 0) {
      const ssize_t n = ::pwrite(fd_, p, size_t(std::min<int64_t>(bytes, int64_t{1} << 30)), off_t(offset));
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno_status("write", path_, errno);
      }
      p += n;
      offset += n;
      bytes -= n;
    }
    return Status::ok();
  }

  Status sync() override {
    if (fd_ < 0) return Status::errorf("{}: fsync after close", path_);
    if (::fsync(fd_) != 0) return errno_status("fsync", path_, errno);
    return Status::ok();
  }

  Status close() override {
    if (fd_ < 0) return Status::ok();
    const int rc = ::close(fd_);
    fd_ = -1;
    // Linux closes the descriptor even when close() reports an error.
    if (rc != 0 && errno != EINTR) return errno_status("close", path_, errno);
    return Status::ok();
  }

 private:
  std::string path_;
  int fd_;
};

class PosixReadableFile final : public ReadableFile {
 public:
  PosixReadableFile(std::string path, int fd, int64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  ~PosixReadableFile() override { ::close(fd_); }

  int64_t size() const override { return size_; }

  Status read_at(int64_t offset, void* dst, int64_t bytes) override {
    char* p = static_cast<char*>(dst);
    while (bytes > 0) {
      const size_t chunk = static_cast<size_t>(std::min<int64_t>(bytes, int64_t{1} << 30));
      const ssize_t n = ::pread(fd_, p, chunk, offset);
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno_status("read", path_, errno);
      }
      if (n == 0) {
        return Status::errorf("{}: unexpected end of file at byte {} ({} more bytes expected)",
                              path_, offset, bytes);
      }
      p += n;
      offset += n;
      bytes -= n;
    }
    return Status::ok();
  }

 private:
  std::string path_;
  int fd_;
  int64_t size_;
};

class PosixFileSystem final : public FileSystem {
 public:
  Result<std::unique_ptr<WritableFile>> new_writable_file(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return errno_status("open for writing", path, errno);
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd));
  }

  Result<std::unique_ptr<WritableFile>> new_appendable_file(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return errno_status("open for appending", path, errno);
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd));
  }

  Result<std::unique_ptr<ReadableFile>> open_readable_file(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno_status("open", path, errno);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      return errno_status("stat", path, err);
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      return Status::errorf("{}: not a regular file", path);
    }
    return std::unique_ptr<ReadableFile>(new PosixReadableFile(path, fd, st.st_size));
  }

  Status create_dirs(const std::string& path) override {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) return Status::errorf("{}: create directory failed: {}", path, ec.message());
    if (!std::filesystem::is_directory(path, ec)) {
      return Status::errorf("{}: exists and is not a directory", path);
    }
    return Status::ok();
  }

  Status sync_dir(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errno_status("open directory", path, errno);
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) return errno_status("fsync directory", path, err);
    return Status::ok();
  }

  Status rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return Status::errorf("rename {} -> {} failed: {}", from, to, std::strerror(errno));
    }
    return Status::ok();
  }

  Status remove_all(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) return Status::errorf("{}: remove failed: {}", path, ec.message());
    return Status::ok();
  }

  Result<std::vector<std::string>> list_dir(const std::string& path) override {
    std::error_code ec;
    std::vector<std::string> names;
    std::filesystem::directory_iterator it(path, ec);
    if (ec) return Status::errorf("{}: list directory failed: {}", path, ec.message());
    // On an error increment() sets `ec` and turns `it` into the end iterator.
    for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
      names.push_back(it->path().filename().string());
    }
    if (ec) return Status::errorf("{}: list directory failed: {}", path, ec.message());
    return names;
  }

  bool exists(const std::string& path) override {
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0;
  }
};

}  // namespace

FileSystem& default_file_system() {
  static PosixFileSystem* fs = new PosixFileSystem();  // leaked on purpose: usable at exit
  return *fs;
}

}  // namespace mt
