// messages_test.cpp — messages that misled a new user (issue 44, item 9),
// one test each: what the message now says, and that it says it briefly.
#include <gtest/gtest.h>

#include "support/e2e.h"

namespace mt::e2e {
namespace {

ProcessResult moetrain(std::vector<std::string> args) {
  args.insert(args.begin(), moetrain_binary());
  return run_process(args, 120);
}

// A trained two-step run, shared by the tests that read one.
const std::string& run() {
  static TempDir* tmp = new TempDir();
  static const std::string dir = [] {
    const std::string d = tmp->path() + "/run";
    const auto r = train({"--preset", "tiny-test", "--run-dir", d, "--set", "train.steps=2"});
    EXPECT_EQ(r.exit_code, 0) << r;
    return d;
  }();
  return dir;
}

TEST(Messages, AMissingCheckpointDirectoryIsSaidToBeMissing) {
  TempDir tmp;
  const auto r = moetrain({"generate", "--ckpt", tmp / "missing/", "--prompt", "a"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r;
  EXPECT_EQ(r.err.find("not a directory"), std::string::npos) << r;
}

TEST(Messages, CkptInspectTakesARunDirectoryAsGenerateDoes) {
  const auto r = moetrain({"ckpt", "inspect", run()});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.out.find("step        2"), std::string::npos) << r;
}

TEST(Messages, ATruncatedCheckpointNamesTheFirstTensorCutNotEvery) {
  TempDir tmp;
  const auto a = train({"--preset", "tiny-test", "--run-dir", tmp / "r", "--set", "train.steps=2"});
  ASSERT_EQ(a.exit_code, 0) << a;
  const std::string shard = ckpt_dir(tmp / "r", 2) + "/rank_00000.safetensors";
  fs::resize_file(shard, fs::file_size(shard) / 2);
  const auto r = moetrain({"ckpt", "inspect", ckpt_dir(tmp / "r", 2)});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("(truncated)"), std::string::npos) << r;
  EXPECT_NE(r.err.find("tensors lie past the end, the first '"), std::string::npos) << r;
  EXPECT_LT(r.err.size(), 400u) << r;
}

TEST(Messages, InjectFaultHelpListsEveryKind) {
  const auto r = moetrain({"train", "--help"});
  for (const char* kind : {"hang", "kill", "killmid", "slow", "nan", "spike", "wronggemm"})
    EXPECT_NE(r.out.find(kind), std::string::npos) << kind;
}

TEST(Messages, ACrossKeyErrorSaysWhichKeyASetChanged) {
  const auto r = train({"--config", std::string(MT_SOURCE_DIR) + "/configs/tiny-test.toml", "--set", "model.n_heads=1",
                        "--set", "model.d_model=16", "--run-dir", ""});
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_NE(
      r.err.find("model.n_kv_heads: must divide model.n_heads = 1 (model.n_heads comes from --set model.n_heads=1)"),
      std::string::npos)
      << r;
}

TEST(Messages, ANegativeCountIsRefusedInWordsNotWithA309DigitRange) {
  const auto r = moetrain({"data", "show", "/nonexistent", "-1"});
  EXPECT_EQ(r.exit_code, 105) << r;  // CLI11's validation error
  EXPECT_NE(r.err.find("expected a number >= 0, got -1"), std::string::npos) << r;
  EXPECT_LT(r.err.size(), 200u) << r;
}

TEST(Messages, ReportAndLadderFitExitAlikeOnUnfittableData) {
  TempDir tmp;
  fs::create_directories(tmp / "ladder");
  write_file(tmp / "ladder/results.jsonl",
             "{\"name\": \"a\", \"params\": 1e6, \"tokens\": 1e7, \"loss\": 4.0}\n"
             "{\"name\": \"b\", \"params\": 2e6, \"tokens\": 2e7, \"loss\": 3.8}\n");
  const auto fit = moetrain({"ladder", "fit", tmp / "ladder/results.jsonl", "--bootstrap", "0"});
  const auto report = moetrain({"report", tmp / "ladder"});
  EXPECT_EQ(fit.exit_code, 2) << fit;
  EXPECT_EQ(report.exit_code, fit.exit_code) << report;
}

TEST(Messages, TheResumeRefusalListsEveryKeyThatMayChange) {
  const auto r = train({"--run-dir", run(), "--resume", "--set", "model.init_std=0.05"});
  EXPECT_NE(r.exit_code, 0) << r;
  for (const char* key : {"train.steps", "async_checkpoint", "activation_checkpointing", "stream.*", "health.*",
                          "optim.state_precision", "[dist] layout"})
    EXPECT_NE(r.err.find(key), std::string::npos) << key << "\n" << r;
  EXPECT_NE(r.err.find("model.init_std = 0.02 -> 0.05"), std::string::npos) << r;
}

}  // namespace
}  // namespace mt::e2e
