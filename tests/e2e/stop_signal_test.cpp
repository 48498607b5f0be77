// stop_signal_test.cpp — Ctrl-C (SIGINT) and SIGTERM stop a run without
// losing work (issue 44, item 10): the step in progress finishes, a
// checkpoint is committed at it, the process exits 128 + the signal, and
// --resume ends bit for bit where an uninterrupted run ends. A second
// signal ends the process at once. Steps are slowed (--inject-fault
// slow:0:1, which changes no math) so that the signal lands mid-run.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstring>

#include "support/e2e.h"

namespace mt::e2e {
namespace {

std::vector<std::string> args(const std::string& dir) {
  return {"--preset", "tiny-test", "--run-dir", dir, "--set", "train.steps=30"};
}

// Starts a slowed run and waits until it has logged `steps` steps.
void wait_for_steps(Background& bg, const std::string& dir, size_t steps) {
  const double t0 = now_s();
  while (bg.running() && read_metrics(dir).size() < steps && now_s() - t0 < 60) sleep_s(0.01);
}

TEST(StopSignal, SigintAndSigtermCheckpointTheStepAndResumeBitExactly) {
  TempDir tmp;
  const auto whole = train(args(tmp / "whole"));
  ASSERT_EQ(whole.exit_code, 0) << whole;
  for (const auto& [sig, code] : std::vector<std::pair<int, int>>{{SIGINT, 130}, {SIGTERM, 143}}) {
    SCOPED_TRACE(strsignal(sig));
    const std::string dir = tmp / ("run" + std::to_string(sig));
    std::vector<std::string> a = args(dir);
    a.insert(a.end(), {"--inject-fault", "slow:0:1"});
    Background bg(train_argv(a), dir + ".out", dir + ".err");
    wait_for_steps(bg, dir, 2);
    ASSERT_TRUE(bg.running()) << read_file(dir + ".err");
    kill(bg.pid(), sig);
    const ProcessResult& r = bg.wait(60);
    EXPECT_EQ(r.exit_code, code) << read_file(dir + ".err");
    const auto rows = read_metrics(dir);
    ASSERT_GE(rows.size(), 2u);
    ASSERT_LT(rows.size(), 30u);
    const int64_t last = rows.back()["step"].get<int64_t>();
    EXPECT_NE(read_file(dir + ".err").find("# stopped at step " + std::to_string(last) + " of 30"), std::string::npos)
        << read_file(dir + ".err");
    const std::string name = fs::path(ckpt_dir(dir, last)).filename();
    EXPECT_EQ(list_dir(dir + "/checkpoints"), std::vector<std::string>{name});  // nothing uncommitted either
    std::vector<std::string> again = args(dir);
    again.push_back("--resume");
    const auto resumed = train(again);
    ASSERT_EQ(resumed.exit_code, 0) << resumed;
    EXPECT_EQ(done_state_hash(resumed.err), done_state_hash(whole.err));
  }
}

// Steps of about 0.25 s here, so the second signal lands mid-step.
TEST(StopSignal, ASecondSignalEndsTheProcessAtOnce) {
  TempDir tmp;
  const std::string dir = tmp / "a";
  std::vector<std::string> a = args(dir);
  a.insert(a.end(), {"--set", "model.d_model=256", "--set", "model.n_layers=4", "--set", "train.batch_size=16", "--set",
                     "train.seq_len=256"});
  Background bg(train_argv(a), tmp / "out", tmp / "err");
  wait_for_steps(bg, dir, 1);
  ASSERT_TRUE(bg.running());
  kill(bg.pid(), SIGINT);
  sleep_s(0.02);  // signals do not queue: the second must come after the first is taken
  kill(bg.pid(), SIGINT);
  const ProcessResult& r = bg.wait(60);
  EXPECT_EQ(r.term_signal, SIGINT) << read_file(tmp / "err");
  EXPECT_EQ(read_file(tmp / "err").find("# stopped at step"), std::string::npos);
}

}  // namespace
}  // namespace mt::e2e
