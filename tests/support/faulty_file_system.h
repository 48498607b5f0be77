// faulty_file_system.h — a FileSystem that fails on cue, for the tests that
// every durable writer (checkpoints, atomic files, the run directory's logs)
// leaves the previous file intact and reports a clear error.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/file_system.h"

namespace mt::testing {

// Fails the Nth mutating operation, or every append once `byte_budget` bytes
// have been written (the failing append writes what the budget allows first).
class FaultyFileSystem final : public FileSystem {
 public:
  int64_t fail_at_op = -1;     // 1-based; -1 = never
  int64_t byte_budget = -1;    // -1 = unlimited
  int64_t ops = 0;
  int64_t bytes = 0;

  Result<std::unique_ptr<WritableFile>> new_writable_file(const std::string& path) override {
    MT_RETURN_IF_ERROR(tick("open " + path));
    auto f = base_.new_writable_file(path);
    if (!f) return f.status();
    return std::unique_ptr<WritableFile>(new File(this, std::move(*f)));
  }
  Result<std::unique_ptr<WritableFile>> new_appendable_file(const std::string& path) override {
    MT_RETURN_IF_ERROR(tick("open for appending " + path));
    auto f = base_.new_appendable_file(path);
    if (!f) return f.status();
    return std::unique_ptr<WritableFile>(new File(this, std::move(*f)));
  }
  Result<std::unique_ptr<ReadableFile>> open_readable_file(const std::string& path) override {
    return base_.open_readable_file(path);
  }
  Status create_dirs(const std::string& p) override {
    MT_RETURN_IF_ERROR(tick("mkdir " + p));
    return base_.create_dirs(p);
  }
  Status sync_dir(const std::string& p) override {
    MT_RETURN_IF_ERROR(tick("fsync dir " + p));
    return base_.sync_dir(p);
  }
  Status rename(const std::string& a, const std::string& b) override {
    MT_RETURN_IF_ERROR(tick("rename " + a));
    return base_.rename(a, b);
  }
  Status remove_all(const std::string& p) override {
    MT_RETURN_IF_ERROR(tick("remove " + p));
    return base_.remove_all(p);
  }
  Result<std::vector<std::string>> list_dir(const std::string& p) override {
    return base_.list_dir(p);
  }
  bool exists(const std::string& p) override { return base_.exists(p); }

 private:
  class File final : public WritableFile {
   public:
    File(FaultyFileSystem* fs, std::unique_ptr<WritableFile> f) : fs_(fs), f_(std::move(f)) {}
    Status append(const void* data, int64_t n) override {
      MT_RETURN_IF_ERROR(fs_->tick("append"));
      if (fs_->byte_budget >= 0 && fs_->bytes + n > fs_->byte_budget) {
        const int64_t part = fs_->byte_budget - fs_->bytes;
        MT_RETURN_IF_ERROR(f_->append(data, part));
        fs_->bytes += part;
        return Status::errorf("injected write failure after {} bytes", fs_->bytes);
      }
      fs_->bytes += n;
      return f_->append(data, n);
    }
    Status write_at(int64_t offset, const void* data, int64_t n) override {
      MT_RETURN_IF_ERROR(fs_->tick("write_at"));
      return f_->write_at(offset, data, n);
    }
    Status sync() override {
      MT_RETURN_IF_ERROR(fs_->tick("fsync"));
      return f_->sync();
    }
    Status close() override {
      MT_RETURN_IF_ERROR(fs_->tick("close"));
      return f_->close();
    }

   private:
    FaultyFileSystem* fs_;
    std::unique_ptr<WritableFile> f_;
  };

  Status tick(const std::string& what) {
    if (++ops == fail_at_op) return Status::errorf("injected failure at op {} ({})", ops, what);
    return Status::ok();
  }
  FileSystem& base_ = default_file_system();
};

}  // namespace mt::testing
