// health_stop_test.cpp — a failed health check stops the run and keeps the
// last good checkpoint (issue 44, item 4): with a checkpoint every 4 steps,
// a check every 2 and a rank computing wrong from step 5, the check at step
// 6 fails; the checkpoint of step 4, snapshotted right after the check at
// step 4 passed, is committed whether or not its background write had
// finished (it used to be lost in about half the runs, leaving only its
// staging directory), nothing uncommitted is left, and --resume continues
// from step 4. With checks on, a checkpoint is only taken right after a check
// passed (the step's own, or one run for it).
#include <gtest/gtest.h>

#include "support/e2e.h"
#include "support/mpi.h"

namespace mt::e2e {
namespace {

std::vector<std::string> args(const std::string& dir, const std::string& check_every, std::vector<std::string> extra) {
  std::vector<std::string> a = {"--preset",  "tiny-test",
                                "--run-dir", dir,
                                "--set",     "train.steps=12",
                                "--set",     "train.checkpoint_every=4",
                                "--set",     "health.every=" + check_every};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// Committed step_* directories and anything uncommitted, by name.
std::pair<std::vector<std::string>, std::vector<std::string>> checkpoints(const std::string& run) {
  std::vector<std::string> committed, other;
  for (const std::string& n : list_dir(run + "/checkpoints")) (n.starts_with("step_") ? committed : other).push_back(n);
  return {committed, other};
}

TEST(HealthStop, TheCheckpointBeforeTheLastPassingCheckIsCommitted) {
  TempDir tmp;
  for (int run = 0; run < 4; ++run) {  // the background write races the next steps
    SCOPED_TRACE("run " + std::to_string(run));
    const std::string dir = tmp / ("r" + std::to_string(run));
    const auto r = train(args(dir, "2", {"--inject-fault", "wronggemm:0:5"}));
    ASSERT_NE(r.exit_code, 0) << r;
    EXPECT_NE(r.err.find("step 6: health check failed"), std::string::npos) << r;
    const auto [committed, other] = checkpoints(dir);
    EXPECT_EQ(committed, std::vector<std::string>{"step_00000004"});
    EXPECT_TRUE(other.empty()) << other.front();
    const auto resumed = train(args(dir, "2", {"--resume"}));
    ASSERT_EQ(resumed.exit_code, 0) << resumed;
    EXPECT_NE(resumed.err.find("(step 4)"), std::string::npos) << resumed;
  }
}

// With a check every 3 steps, a checkpoint at step 4 gets a check of its
// own first: a rank wrong from step 4 fails it, and no checkpoint of its
// work is taken (nor left half-written).
TEST(HealthStop, ACheckpointStepIsCheckedBeforeItsSnapshot) {
  TempDir tmp;
  const std::string dir = tmp / "a";
  const auto r = train(args(dir, "3", {"--inject-fault", "wronggemm:0:4"}));
  ASSERT_NE(r.exit_code, 0) << r;
  EXPECT_NE(r.err.find("step 4: health check failed"), std::string::npos) << r;
  const auto [committed, other] = checkpoints(dir);
  EXPECT_TRUE(committed.empty()) << committed.front();
  EXPECT_TRUE(other.empty()) << other.front();
  const auto clean = train(args(tmp / "b", "3", {}));
  ASSERT_EQ(clean.exit_code, 0) << clean;
  // Checks at 3, 6, 9 and 12, and for the checkpoints of steps 4 and 8.
  EXPECT_NE(clean.err.find("# health checks: 6 passed"), std::string::npos) << clean;
}

TEST(HealthStop, UnderMpiTheCheckpointIsCommittedToo) {
  TempDir tmp;
  const std::string dir = tmp / "a";
  const auto r = mpi_train(2, args(dir, "2", {"--inject-fault", "wronggemm:1:5"}), 180);
  EXPECT_NE(r.err.find("step 6: health check failed"), std::string::npos) << r;
  const auto [committed, other] = checkpoints(dir);
  EXPECT_EQ(committed, std::vector<std::string>{"step_00000004"});
  EXPECT_TRUE(other.empty());
}

}  // namespace
}  // namespace mt::e2e
