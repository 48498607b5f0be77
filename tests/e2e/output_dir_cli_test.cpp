// output_dir_cli_test.cpp — one rule for the output directories of export
// and import (issue 44, items 1 and 10): `import` into a directory that
// holds a run is refused (exit 2) and leaves the run as it was (it used to
// replace config.toml and add a foreign checkpoint, after which --resume and
// generate failed); `export` of another checkpoint or format into an
// existing export is refused instead of leaving the old shards beside the
// new; the same export again is allowed; --move-aside renames.
#include <gtest/gtest.h>

#include "support/e2e.h"

namespace mt::e2e {
namespace {

ProcessResult moetrain(std::vector<std::string> args) {
  args.insert(args.begin(), moetrain_binary());
  return run_process(args, 120);
}

TEST(OutputDirCli, ImportNeverOverwritesARun) {
  TempDir tmp;
  const auto a = train({"--preset", "tiny-test", "--run-dir", tmp / "a", "--set", "train.steps=4"});
  ASSERT_EQ(a.exit_code, 0) << a;
  const auto b = train({"--preset", "tiny-test", "--run-dir", tmp / "b", "--set", "train.steps=2", "--set",
                        "model.d_model=32", "--set", "model.n_heads=2"});
  ASSERT_EQ(b.exit_code, 0) << b;
  const auto x = moetrain({"export", "--ckpt", tmp / "a", "--format", "safetensors", "--out", tmp / "raw"});
  ASSERT_EQ(x.exit_code, 0) << x;

  const std::string config_b = read_file(tmp / "b/config.toml");
  const auto into_b = moetrain({"import", "--hf", tmp / "raw", "--out", tmp / "b"});
  EXPECT_EQ(into_b.exit_code, 2) << into_b;
  EXPECT_NE(into_b.err.find("already holds a run"), std::string::npos) << into_b;
  EXPECT_NE(into_b.err.find("--move-aside"), std::string::npos) << into_b;
  EXPECT_EQ(read_file(tmp / "b/config.toml"), config_b);
  EXPECT_FALSE(fs::exists(ckpt_dir(tmp / "b", 4)));
  const auto resumed = train({"--run-dir", tmp / "b", "--resume"});
  EXPECT_EQ(resumed.exit_code, 0) << "the run survived the refused import: " << resumed;
  const std::string config_resumed = read_file(tmp / "b/config.toml");

  const auto fresh = moetrain({"import", "--hf", tmp / "raw", "--out", tmp / "c"});
  ASSERT_EQ(fresh.exit_code, 0) << fresh;
  const auto aside = moetrain({"import", "--hf", tmp / "raw", "--out", tmp / "b", "--move-aside"});
  ASSERT_EQ(aside.exit_code, 0) << aside;
  EXPECT_EQ(read_file(tmp / "b.prev-1/config.toml"), config_resumed);
  EXPECT_TRUE(fs::exists(ckpt_dir(tmp / "b", 4)));
}

TEST(OutputDirCli, AnExportDirectoryHoldsOneExport) {
  TempDir tmp;
  const auto a = train(
      {"--preset", "tiny-test", "--run-dir", tmp / "a", "--set", "train.steps=4", "--set", "train.checkpoint_every=2"});
  ASSERT_EQ(a.exit_code, 0) << a;
  const auto first = moetrain({"export", "--ckpt", tmp / "a", "--format", "safetensors", "--out", tmp / "x"});
  ASSERT_EQ(first.exit_code, 0) << first;
  const std::string tensors = read_file(tmp / "x/model.safetensors");
  // The same export again: allowed, the same bytes.
  const auto again = moetrain({"export", "--ckpt", tmp / "a", "--format", "safetensors", "--out", tmp / "x"});
  ASSERT_EQ(again.exit_code, 0) << again;
  EXPECT_EQ(read_file(tmp / "x/model.safetensors"), tensors);
  // Another checkpoint, or sharded: refused, nothing written.
  const auto older =
      moetrain({"export", "--ckpt", ckpt_dir(tmp / "a", 2), "--format", "safetensors", "--out", tmp / "x"});
  EXPECT_EQ(older.exit_code, 2) << older;
  EXPECT_NE(older.err.find("step = 4 -> 2"), std::string::npos) << older;
  const auto sharded = moetrain(
      {"export", "--ckpt", tmp / "a", "--format", "safetensors", "--max-shard-mb", "0.01", "--out", tmp / "x"});
  EXPECT_EQ(sharded.exit_code, 2) << sharded;
  EXPECT_EQ(read_file(tmp / "x/model.safetensors"), tensors);
  EXPECT_FALSE(fs::exists(tmp / "x/model.safetensors.index.json"));
  // A directory of other files: refused.
  fs::create_directories(tmp / "notes");
  write_file(tmp / "notes/readme.txt", "mine");
  const auto foreign = moetrain({"export", "--ckpt", tmp / "a", "--format", "safetensors", "--out", tmp / "notes"});
  EXPECT_EQ(foreign.exit_code, 2) << foreign;
  // --move-aside: the old export is renamed, the new one written alone.
  const auto aside = moetrain({"export", "--ckpt", tmp / "a", "--format", "safetensors", "--max-shard-mb", "0.01",
                               "--out", tmp / "x", "--move-aside"});
  ASSERT_EQ(aside.exit_code, 0) << aside;
  EXPECT_TRUE(fs::exists(tmp / "x.prev-1/model.safetensors"));
  EXPECT_FALSE(fs::exists(tmp / "x/model.safetensors"));
  EXPECT_TRUE(fs::exists(tmp / "x/model.safetensors.index.json"));
}

}  // namespace
}  // namespace mt::e2e
