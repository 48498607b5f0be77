// sft_training_test.cpp — `moetrain sft` through the real binary: a tiny
// pretrained run fine-tuned on task items starts from its weights (fresh
// optimizer), trains on the packed examples and lowers its loss; SIGKILL in
// the middle then --resume ends with the uninterrupted state hash; bad
// input is refused naming what is wrong (a malformed example's FILE:LINE,
// a model of another shape, no --init).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include "support/e2e.h"

namespace mt {
namespace {

using ::testing::HasSubstr;
namespace e2e = mt::e2e;

class SftTraining : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new e2e::TempDir();
    const auto base = e2e::train({"--preset", "tiny-test", "--set", "train.steps=4", "--set", "train.seq_len=64",
                                  "--set", "train.threads=1", "--run-dir", dir() + "/base"});
    ASSERT_EQ(base.exit_code, 0) << base;
    const auto items = e2e::moetrain(
        {"tasks", "make", "copy", "--length", "6", "--split", "train", "--n", "160", "--out", dir() + "/items.jsonl"});
    ASSERT_EQ(items.exit_code, 0) << items;
    const auto held = e2e::moetrain(
        {"tasks", "make", "copy", "--length", "6", "--split", "held-out", "--n", "20", "--out", dir() + "/held.jsonl"});
    ASSERT_EQ(held.exit_code, 0) << held;
  }
  static void TearDownTestSuite() { delete tmp_; }
  static std::string dir() { return tmp_->path(); }
  static std::vector<std::string> sft(const std::string& run, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {"sft",        "--no-progress",
                                  "--init",     dir() + "/base",
                                  "--data",     dir() + "/items.jsonl",
                                  "--held-out", dir() + "/held.jsonl",
                                  "--run-dir",  run,
                                  "--set",      "train.checkpoint_every=1",
                                  "--set",      "train.threads=1"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  static e2e::TempDir* tmp_;
};
e2e::TempDir* SftTraining::tmp_ = nullptr;

TEST_F(SftTraining, StartsFromTheCheckpointLearnsAndResumesBitForBit) {
  const std::string a = dir() + "/a";
  const auto whole = e2e::moetrain(sft(a), 300);
  ASSERT_EQ(whole.exit_code, 0) << whole;
  EXPECT_THAT(whole.err, HasSubstr("# init: weights of"));
  EXPECT_THAT(whole.err, HasSubstr("supervised examples"));
  const auto rows = e2e::read_metrics(a);
  ASSERT_GE(rows.size(), 8u) << "one pass over 160 packed examples";
  EXPECT_TRUE(e2e::has_steps_1_to_n(rows, int64_t(rows.size())));
  const std::vector<double> loss = e2e::losses(rows);
  EXPECT_LT(loss.back(), loss.front()) << "fine-tuning did not lower the loss";
  bool evaluated = false;
  for (const auto& r : rows) evaluated |= r.contains("eval_loss");
  EXPECT_TRUE(evaluated) << "held-out examples but no eval pass";
  EXPECT_THAT(e2e::read_file(a + "/config.toml"), HasSubstr("sft = "));

  // The same run killed in its middle, then resumed with its saved config (no --init or --data needed).
  const std::string b = dir() + "/b";
  const auto killed = e2e::moetrain(sft(b, {"--inject-fault", "kill:0:5"}), 300);
  ASSERT_EQ(killed.term_signal, SIGKILL) << killed;
  const auto resumed =
      e2e::moetrain({"sft", "--no-progress", "--resume", "--run-dir", b, "--set", "train.threads=1"}, 300);
  ASSERT_EQ(resumed.exit_code, 0) << resumed;
  EXPECT_EQ(e2e::done_state_hash(resumed.err), e2e::done_state_hash(whole.err));
  EXPECT_TRUE(e2e::has_steps_1_to_n(e2e::read_metrics(b), int64_t(rows.size())));
}

TEST_F(SftTraining, BadInputIsRefusedNamingIt) {
  e2e::write_file(dir() + "/bad.jsonl", "{\"prompt\": \"a\", \"completion\": \" b\"}\n{\"prompt\": \"a\"}\n");
  std::vector<std::string> bad = sft(dir() + "/bad-run");
  bad[5] = dir() + "/bad.jsonl";  // --data
  const auto malformed = e2e::moetrain(bad);
  EXPECT_EQ(malformed.exit_code, 2) << malformed;
  EXPECT_THAT(malformed.err, HasSubstr("bad.jsonl:2: \"completion\""));
  EXPECT_FALSE(std::filesystem::exists(dir() + "/bad-run/checkpoints"));

  const auto shape = e2e::moetrain(sft(dir() + "/shape", {"--set", "model.d_model=32"}));
  EXPECT_EQ(shape.exit_code, 1) << shape;
  EXPECT_THAT(shape.err, HasSubstr("train.init_from"));
  EXPECT_THAT(shape.err, HasSubstr("model keys differ"));

  const auto no_init = e2e::moetrain({"sft", "--data", dir() + "/items.jsonl", "--run-dir", dir() + "/x"});
  EXPECT_EQ(no_init.exit_code, 2) << no_init;
  EXPECT_THAT(no_init.err, HasSubstr("--init"));
}

}  // namespace
}  // namespace mt
