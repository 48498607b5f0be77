// train_run_branch_test.cpp — a branch is the source run at one checkpoint:
// the checkpoint byte for byte, the config it was written under (not the
// run's newer config.toml), the metrics through its step; a used directory
// or a corrupt checkpoint is refused and nothing is left behind.
#include "train/run_branch.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "ckpt/checkpoint.h"
#include "core/file_io.h"
#include "rundir/run_dir.h"
#include "support/temp_dir.h"

namespace mt {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A run directory with checkpoints at steps 2 and 4, each written under its
// own config text, metrics for steps 1..5 and a config.toml of "step 5".
std::string make_run(const TempDir& tmp) {
  const std::string run = tmp / "run";
  const std::vector<float> w = {1.f, 2.f, 3.f, 4.f};
  for (int64_t step : {2, 4}) {
    const std::vector<TensorView> t = {{"w", {2, 2}, w.data()}};
    EXPECT_TRUE(write_checkpoint(run_checkpoints_dir(run), step, t, "# config at " + std::to_string(step) + "\n",
                                 {{"step", step}}, 0));
  }
  std::string metrics;
  for (int s = 1; s <= 5; ++s) metrics += "{\"step\":" + std::to_string(s) + ",\"loss\":1.0}\n";
  EXPECT_TRUE(write_file_atomic(run + "/metrics.jsonl", metrics));
  EXPECT_TRUE(save_run_config(run, "# config at 5\n"));
  return run;
}

TEST(RunBranch, CopiesTheCheckpointItsConfigAndTheMetricsThroughItsStep) {
  TempDir tmp;
  const std::string run = make_run(tmp);
  const std::string to = tmp / "branch";
  auto b = branch_run(run_checkpoints_dir(run) + "/step_00000002", to);
  ASSERT_TRUE(b) << b.status().message();
  EXPECT_EQ(b->step, 2);
  const std::string copy = run_checkpoints_dir(to) + "/step_00000002";
  EXPECT_TRUE(verify_checkpoint(copy));
  EXPECT_EQ(slurp(copy + "/manifest.json"), slurp(run_checkpoints_dir(run) + "/step_00000002/manifest.json"));
  EXPECT_FALSE(fs::exists(run_checkpoints_dir(to) + "/step_00000004"));
  EXPECT_EQ(slurp(saved_config_path(to)), "# config at 2\n");
  EXPECT_EQ(slurp(to + "/metrics.jsonl"), "{\"step\":1,\"loss\":1.0}\n{\"step\":2,\"loss\":1.0}\n");
  EXPECT_FALSE(fs::exists(to + ".tmp"));
  // The source is only read.
  EXPECT_EQ(slurp(saved_config_path(run)), "# config at 5\n");
}

TEST(RunBranch, ARunDirectoryBranchesAtItsNewestCheckpoint) {
  TempDir tmp;
  const std::string run = make_run(tmp);
  fs::create_directories(tmp / "empty");  // an empty directory is as good as none
  auto b = branch_run(run, tmp / "empty");
  ASSERT_TRUE(b) << b.status().message();
  EXPECT_EQ(b->step, 4);
  EXPECT_EQ(slurp(saved_config_path(tmp / "empty")), "# config at 4\n");
}

TEST(RunBranch, RefusesAUsedDirectoryAndACorruptCheckpointLeavingNothing) {
  TempDir tmp;
  const std::string run = make_run(tmp);
  auto used = branch_run(run, run);
  ASSERT_FALSE(used);
  EXPECT_NE(used.status().message().find("already holds a run"), std::string::npos) << used.status().message();

  // A stale half-branch from a kill is replaced; a corrupt source is refused
  // before anything is copied.
  fs::create_directories(tmp / "b.tmp/junk");
  const std::string shard = run_checkpoints_dir(run) + "/step_00000004/rank_00000.safetensors";
  std::string bytes = slurp(shard);
  bytes[bytes.size() - 1] ^= 0x01;
  std::ofstream(shard, std::ios::binary | std::ios::trunc) << bytes;
  auto bad = branch_run(run_checkpoints_dir(run) + "/step_00000004", tmp / "b");
  ASSERT_FALSE(bad);
  EXPECT_FALSE(fs::exists(tmp / "b"));
  auto good = branch_run(run_checkpoints_dir(run) + "/step_00000002", tmp / "b");
  ASSERT_TRUE(good) << good.status().message();
  EXPECT_FALSE(fs::exists(tmp / "b.tmp"));
  EXPECT_FALSE(fs::exists(tmp / "b/junk"));
}

}  // namespace
}  // namespace mt
