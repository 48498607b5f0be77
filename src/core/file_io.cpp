// file_io.cpp — std::ifstream into a string.
#include "core/file_io.h"

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

}  // namespace mt
