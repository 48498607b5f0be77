// spike_cli_test.cpp — the spike guard through `moetrain train` with an
// injected gradient spike (--inject-fault spike:RANK:STEP) on tiny-test:
// skip leaves the update out, logs the spike and resumes after SIGKILL to the
// same state; rollback returns to the last checkpoint, skips the data since
// and keeps metrics.jsonl one line per step; lr-cooldown scales the lr after
// the spike; a NaN gradient with the guard off stops the run naming the rank.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/e2e.h"

namespace mt::e2e {
namespace {

using nlohmann::json;

std::vector<std::string> guarded(const std::string& dir, const std::string& policy) {
  return {"--preset", "tiny-test", "--run-dir", dir, "--set", "train.steps=40", "--set", "train.checkpoint_every=10",
          "--set", "spike.policy=" + policy, "--set", "spike.min_history=20", "--set", "spike.window=20"};
}

// The guard's events (spikes, rollbacks); starts and checkpoint commits are logged too.
std::vector<json> events(const std::string& dir) {
  std::vector<json> out;
  std::istringstream in(read_file(dir + "/events.jsonl"));
  for (std::string line; std::getline(in, line);) {
    json e = json::parse(line);
    if (e["event"] == "spike" || e["event"] == "rollback") out.push_back(std::move(e));
  }
  return out;
}

TEST(SpikeGuardCli, SkipLeavesTheUpdateOutAndResumesBitwise) {
  TempDir tmp;
  auto args = guarded(tmp / "a", "skip");
  args.insert(args.end(), {"--inject-fault", "spike:0:35"});
  const auto a = train(args);
  ASSERT_EQ(a.exit_code, 0) << a;
  const auto ev = events(tmp / "a");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0]["event"], "spike");
  EXPECT_EQ(ev[0]["step"], 35);
  const auto rows = read_metrics(tmp / "a");
  EXPECT_TRUE(has_steps_1_to_n(rows, 40));
  EXPECT_TRUE(rows[34].contains("spike")) << rows[34].dump();
  EXPECT_FALSE(rows[33].contains("spike"));
  // A clean run differs (the spike's update really was left out of a).
  const auto clean = train({"--preset", "tiny-test", "--run-dir", tmp / "clean", "--set", "train.steps=40"});
  EXPECT_NE(done_state_hash(clean.err), done_state_hash(a.err));
  // Killed after the spike (checkpoint at 36, every 2 steps) and resumed: the same state.
  auto b_args = guarded(tmp / "b", "skip");
  b_args.insert(b_args.end(), {"--set", "train.checkpoint_every=2", "--inject-fault", "spike:0:35"});
  Background bg(train_argv(b_args), tmp / "b.out", tmp / "b.err");
  const double t0 = now_s();
  while (bg.running() && !fs::exists(ckpt_dir(tmp / "b", 36)) && now_s() - t0 < 60) sleep_s(0.002);
  if (!bg.kill9()) GTEST_SKIP() << "finished before the kill";
  auto r_args = guarded(tmp / "b", "skip");
  r_args.insert(r_args.end(), {"--set", "train.checkpoint_every=2", "--resume"});
  const auto resumed = train(r_args);
  ASSERT_EQ(resumed.exit_code, 0) << resumed;
  EXPECT_EQ(done_state_hash(resumed.err), done_state_hash(a.err));
}

TEST(SpikeGuardCli, RollbackReturnsToTheCheckpointAndSkipsTheData) {
  TempDir tmp;
  auto args = guarded(tmp / "a", "rollback");
  args.insert(args.end(), {"--inject-fault", "spike:0:35"});
  const auto a = train(args);
  ASSERT_EQ(a.exit_code, 0) << a;
  const auto ev = events(tmp / "a");
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[1]["event"], "rollback");
  EXPECT_EQ(ev[1]["to_step"], 30);
  // Steps 31..35's data (5 steps of tiny-test's 4 sequences) is never trained on.
  EXPECT_EQ(ev[1]["skipped_sequences"], 5 * 4);
  EXPECT_EQ(ev[1]["skip_sequences"], json::array({5 * 4}));
  EXPECT_TRUE(has_steps_1_to_n(read_metrics(tmp / "a"), 40));  // the rolled-back steps are gone from the log
  const auto again = train([&] {
    auto v = guarded(tmp / "again", "rollback");
    v.insert(v.end(), {"--inject-fault", "spike:0:35"});
    return v;
  }());
  EXPECT_EQ(done_state_hash(again.err), done_state_hash(a.err));  // deterministic
  // The checkpoint records the offset: a resume from the end is the same run.
  auto r = guarded(tmp / "a", "rollback");
  r.push_back("--resume");
  const auto resumed = train(r);
  ASSERT_EQ(resumed.exit_code, 0) << resumed;
  EXPECT_EQ(done_state_hash(resumed.err), done_state_hash(a.err));
}

TEST(SpikeGuardCli, CooldownScalesTheLearningRateAfterTheSpike) {
  TempDir tmp;
  auto args = guarded(tmp / "a", "lr-cooldown");
  args.insert(args.end(), {"--set", "spike.cooldown_factor=0.25", "--set", "spike.cooldown_steps=4", "--inject-fault",
                           "spike:0:30", "--set", "train.schedule=constant", "--set", "train.lr=0.002"});
  const auto a = train(args);
  ASSERT_EQ(a.exit_code, 0) << a;
  const auto rows = read_metrics(tmp / "a");
  ASSERT_TRUE(has_steps_1_to_n(rows, 40));
  EXPECT_DOUBLE_EQ(rows[29]["lr"].get<double>(), 0.002);  // the spike step itself (not applied)
  EXPECT_DOUBLE_EQ(rows[30]["lr"].get<double>(), 0.002 * 0.25);
  EXPECT_DOUBLE_EQ(rows[32]["lr"].get<double>(), 0.002 * (0.25 + 0.75 * 0.5));
  EXPECT_DOUBLE_EQ(rows[34]["lr"].get<double>(), 0.002);
}

TEST(SpikeGuardCli, NanGradientWithTheGuardOffStopsNamingTheRank) {
  TempDir tmp;
  const auto r = train({"--preset", "tiny-test", "--run-dir", tmp / "a", "--set", "train.steps=20",
                        "--set", "train.checkpoint_every=5", "--inject-fault", "nan:0:12"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_NE(r.err.find("step 12: gradient norm is nan (non-finite gradient on rank 0)"), std::string::npos) << r;
  EXPECT_TRUE(fs::exists(ckpt_dir(tmp / "a", 10)));  // the last good checkpoint is kept
}

}  // namespace
}  // namespace mt::e2e
