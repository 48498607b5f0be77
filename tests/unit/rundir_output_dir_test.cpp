// rundir_output_dir_test.cpp — rundir/output_dir.h: an output directory holds one
// configuration of one command. Claims of an absent or empty directory
// stamp it; the same owner continues; another command, a changed key or a
// changed part is refused naming it, and nothing in the directory changes;
// parts may be added or dropped (and the stamp keeps the dropped ones);
// --move-aside renames, never deletes; flatten_toml numbers arrays of tables.
#include "rundir/output_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/file_io.h"

namespace mt {
namespace {

namespace fs = std::filesystem;

std::string fresh(const std::string& name) {
  const std::string d = ::testing::TempDir() + "output_dir_test_" + name;
  fs::remove_all(d);
  for (int n = 1; n < 5; ++n) fs::remove_all(d + ".prev-" + std::to_string(n));
  return d;
}

OutputOwner owner(const std::string& steps, std::map<std::string, std::map<std::string, std::string>> parts = {}) {
  return OutputOwner{"ladder run", {{"train.steps", steps}}, std::move(parts)};
}

TEST(OutputDir, FlattenNumbersArraysOfTablesAndPrefixesKeys) {
  const auto f = flatten_toml("top = 1\n[model]\nd_model = 64\n[[rung]]\nname = \"a\"\n[[rung]]\nname = \"b\"\n", "x.");
  EXPECT_EQ(f.at("x.top"), "1");
  EXPECT_EQ(f.at("x.model.d_model"), "64");
  EXPECT_EQ(f.at("x.rung.0.name"), "\"a\"");
  EXPECT_EQ(f.at("x.rung.1.name"), "\"b\"");
  EXPECT_EQ(describe_differences({{"a", "1"}, {"b", "2"}}, {{"a", "1"}, {"b", "3"}, {"c", "4"}}),
            "  b = 2 -> 3\n  c = (absent) -> 4\n");
}

TEST(OutputDir, TheSameOwnerContinuesAnotherIsRefusedNamingWhatDiffers) {
  const std::string d = fresh("same");
  auto first = claim_output_dir(d, owner("10"), OutputDirMode::kContinue);
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  EXPECT_TRUE(fs::exists(owner_stamp_path(d)));
  write_file_atomic(d + "/results.jsonl", "kept\n");
  EXPECT_TRUE(claim_output_dir(d, owner("10"), OutputDirMode::kContinue).is_ok());

  auto changed = claim_output_dir(d, owner("20"), OutputDirMode::kContinue);
  ASSERT_FALSE(changed.is_ok());
  EXPECT_NE(changed.status().message().find("train.steps = 10 -> 20"), std::string::npos) << changed.status().message();
  EXPECT_NE(changed.status().message().find("--move-aside"), std::string::npos);
  auto other = claim_output_dir(d, OutputOwner{"mix search", {{"train.steps", "10"}}, {}}, OutputDirMode::kContinue);
  ASSERT_FALSE(other.is_ok());
  EXPECT_NE(other.status().message().find("`moetrain ladder run`, not of `moetrain mix search`"), std::string::npos)
      << other.status().message();
  EXPECT_EQ(read_file(d + "/results.jsonl", "results").value(), "kept\n");
  // Both refusals left the stamp as it was: the first owner still continues.
  EXPECT_TRUE(claim_output_dir(d, owner("10"), OutputDirMode::kContinue).is_ok());
}

TEST(OutputDir, PartsMayBeAddedOrDroppedButNotChanged) {
  const std::string d = fresh("parts");
  ASSERT_TRUE(
      claim_output_dir(d, owner("1", {{"r1", {{"d", "32"}}}, {"r2", {{"d", "64"}}}}), OutputDirMode::kContinue));
  // r2 dropped, r3 added: continues, and the stamp still knows r2.
  ASSERT_TRUE(
      claim_output_dir(d, owner("1", {{"r1", {{"d", "32"}}}, {"r3", {{"d", "96"}}}}), OutputDirMode::kContinue));
  auto back = claim_output_dir(d, owner("1", {{"r2", {{"d", "48"}}}}), OutputDirMode::kContinue);
  ASSERT_FALSE(back.is_ok());
  EXPECT_NE(back.status().message().find("r2: d = 64 -> 48"), std::string::npos) << back.status().message();
}

TEST(OutputDir, UnstampedFilesAreRefusedAndMoveAsideRenames) {
  const std::string d = fresh("foreign");
  fs::create_directories(d);
  std::ofstream(d + "/notes.txt") << "mine";
  auto refused = claim_output_dir(d, owner("1"), OutputDirMode::kContinue);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("did not write"), std::string::npos) << refused.status().message();
  EXPECT_FALSE(fs::exists(owner_stamp_path(d)));

  auto moved = claim_output_dir(d, owner("1"), OutputDirMode::kMoveAside);
  ASSERT_TRUE(moved.is_ok()) << moved.status().message();
  EXPECT_EQ(moved.value(), d + ".prev-1");
  EXPECT_TRUE(fs::exists(d + ".prev-1/notes.txt"));
  EXPECT_TRUE(fs::exists(owner_stamp_path(d)));
  // The same owner again under --move-aside: nothing to move.
  auto again = claim_output_dir(d, owner("1"), OutputDirMode::kMoveAside);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again.value(), "");
  // An empty directory is anyone's.
  const std::string e = fresh("empty");
  fs::create_directories(e);
  EXPECT_TRUE(claim_output_dir(e, owner("1"), OutputDirMode::kContinue).is_ok());
}

}  // namespace
}  // namespace mt
