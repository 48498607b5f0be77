// export_safetensors_dir_test.cpp — a safetensors model directory
// (src/export/safetensors_dir.h) survives a failed write: every file
// operation of a sharded export written over an earlier one, failed in turn,
// leaves each file of the earlier export whole.
#include "export/safetensors_dir.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "core/file_io.h"
#include "support/e2e.h"
#include "support/faulty_file_system.h"

namespace mt {
namespace {

using e2e::TempDir;
namespace fs = std::filesystem;

// Every file operation of a sharded export written over an earlier one,
// failed in turn: an error naming a file of the export, every file of the
// earlier export still whole (its bytes, or the new file's), no temporary.
TEST(SafetensorsShards, AFailedWriteKeepsEachFileWhole) {
  TempDir tmp;
  const std::string dir = tmp / "hf";
  fs::create_directories(dir);
  auto make = [](float base) {
    std::vector<NamedTensor> t;
    for (int i = 0; i < 3; ++i) t.push_back({fmt::format("w{}", i), {4, 8}, std::vector<float>(32, base + float(i))});
    return t;
  };
  auto files_of = [&] {
    std::map<std::string, std::string> out;
    for (const std::string& f : e2e::list_dir(dir)) out[f] = read_file(dir + "/" + f).value();
    return out;
  };
  ASSERT_TRUE(write_safetensors_shards(dir, make(1.0f), {}, 200));  // three shards and an index
  const auto old_files = files_of();
  ASSERT_EQ(old_files.size(), 4u);
  testing::FaultyFileSystem counter;
  ASSERT_TRUE(write_safetensors_shards(dir, make(2.0f), {}, 200, TensorDtype::kF32, counter));
  const auto new_files = files_of();
  ASSERT_GE(counter.ops, 20);
  for (int64_t op = 1; op <= counter.ops; ++op) {
    SCOPED_TRACE("failing op " + std::to_string(op));
    ASSERT_TRUE(write_safetensors_shards(dir, make(1.0f), {}, 200));
    testing::FaultyFileSystem faulty;
    faulty.fail_at_op = op;
    auto r = write_safetensors_shards(dir, make(2.0f), {}, 200, TensorDtype::kF32, faulty);
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find(dir + "/"), std::string::npos) << r.status().message();
    for (const auto& [name, bytes] : files_of()) {
      ASSERT_TRUE(old_files.count(name)) << "left behind: " << name;
      EXPECT_TRUE(bytes == old_files.at(name) || bytes == new_files.at(name)) << name << " is torn";
    }
  }
}

}  // namespace
}  // namespace mt
