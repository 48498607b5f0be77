// file_io.cpp — whole-file reads, and atomic small-file writes.
#include "core/file_io.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace mt {

Result<std::string> read_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::errorf("{}: cannot open {}", path, what);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::errorf("{}: error reading {}", path, what);
  return ss.str();
}

Status write_file_atomic(const std::string& path, const std::function<Status(WritableFile&)>& write,
                         FileSystem& fs, WriteDurability durability) {
  const bool durable = durability == WriteDurability::kDurable;
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  Status s = [&]() -> Status {
    auto f = fs.new_writable_file(tmp);
    if (!f) return f.status();
    MT_RETURN_IF_ERROR(write(*f.value()));
    if (durable) MT_RETURN_IF_ERROR((*f)->sync());
    MT_RETURN_IF_ERROR((*f)->close());
    MT_RETURN_IF_ERROR(fs.rename(tmp, path));
    const std::string dir = std::filesystem::path(path).parent_path().string();
    return durable ? fs.sync_dir(dir.empty() ? "." : dir) : Status::ok();  // the rename itself persists
  }();
  if (s) return s;
  if (fs.exists(tmp)) (void)fs.remove_all(tmp);  // the first error is the one to report
  return Status::errorf("{}: not written (the previous file is kept): {}", path, s.message());
}

Status write_file_atomic(const std::string& path, const std::string& content, FileSystem& fs,
                         WriteDurability durability) {
  return write_file_atomic(
      path, [&](WritableFile& f) { return f.append(content.data(), int64_t(content.size())); }, fs, durability);
}

}  // namespace mt
