// append_log.cpp — see append_log.h.
#include "rundir/append_log.h"

#include <unistd.h>

#include <filesystem>

namespace mt {

Result<std::unique_ptr<AppendLog>> AppendLog::open(const std::string& path, std::string_view kept, FileSystem& fs) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  std::unique_ptr<WritableFile> file;
  Status s = [&]() -> Status {
    auto f = fs.new_writable_file(tmp);
    if (!f) return f.status();
    file = std::move(f.value());
    MT_RETURN_IF_ERROR(file->append(kept.data(), int64_t(kept.size())));
    MT_RETURN_IF_ERROR(file->sync());
    MT_RETURN_IF_ERROR(fs.rename(tmp, path));
    const std::string dir = std::filesystem::path(path).parent_path().string();
    return fs.sync_dir(dir.empty() ? "." : dir);
  }();
  if (!s) {
    file.reset();
    if (fs.exists(tmp)) (void)fs.remove_all(tmp);  // the first error is the one to report
    return Status::errorf("{}: cannot rewrite (the previous file is kept): {}", path, s.message());
  }
  return std::unique_ptr<AppendLog>(new AppendLog(path, std::move(file)));
}

Status AppendLog::append(std::string_view bytes) {
  Status s = file_->append(bytes.data(), int64_t(bytes.size()));
  if (!s) return Status::errorf("{}: cannot append: {}", path_, s.message());
  return s;
}

}  // namespace mt
