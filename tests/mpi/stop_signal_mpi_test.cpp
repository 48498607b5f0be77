// stop_signal_mpi_test.cpp — under mpirun -np 2, SIGTERM to one rank (as a
// scheduler sends it) stops both after the same step: the signal travels
// with the step's statistics. The checkpoint is committed there, the job
// exits 143, and --resume ends where the uninterrupted job ends.
#include <gtest/gtest.h>
#include <signal.h>


#include "support/e2e.h"
#include "support/mpi.h"

namespace mt::e2e {
namespace {

TEST(StopSignalMpi, SigtermToOneRankStopsEveryRankAtTheSameStep) {
  TempDir tmp;
  const std::vector<std::string> args = {"--preset", "tiny-test", "--set", "train.steps=30"};
  std::vector<std::string> whole_args = args;
  whole_args.insert(whole_args.end(), {"--run-dir", tmp / "whole"});
  const auto whole = mpi_train(2, whole_args, 180);
  ASSERT_FALSE(done_state_hash(whole.err).empty()) << whole;

  const std::string dir = tmp / "run", beats = tmp / "beats";
  std::vector<std::string> a = args;
  a.insert(a.end(), {"--run-dir", dir, "--heartbeat", beats, "--inject-fault", "slow:1:1"});
  std::vector<std::string> argv = {
      MT_MPIEXEC, "--allow-run-as-root",    "--oversubscribe", "--bind-to", "none", "-np", "2",
      "-x",       "OMP_WAIT_POLICY=PASSIVE"};
  const std::vector<std::string> train = train_argv(a);
  argv.insert(argv.end(), train.begin(), train.end());
  Background job(argv, tmp / "out", tmp / "err");
  const double t0 = now_s();
  while (job.running() && read_metrics(dir).size() < 2 && now_s() - t0 < 120) sleep_s(0.02);
  ASSERT_TRUE(job.running()) << read_file(tmp / "err");
  const json beat = json::parse(read_file(beats + "/rank_1.json"));  // the heartbeat names the rank's pid
  kill(pid_t(beat["pid"].get<int64_t>()), SIGTERM);
  const ProcessResult& r = job.wait(120);
  EXPECT_EQ(r.exit_code, 143) << read_file(tmp / "err");
  const auto rows = read_metrics(dir);
  ASSERT_GE(rows.size(), 2u);
  ASSERT_LT(rows.size(), 30u);
  const std::string name = fs::path(ckpt_dir(dir, rows.back()["step"].get<int64_t>())).filename();
  EXPECT_EQ(list_dir(dir + "/checkpoints"), std::vector<std::string>{name});  // nothing uncommitted either
  std::vector<std::string> again = args;
  again.insert(again.end(), {"--run-dir", dir, "--resume"});
  const auto resumed = mpi_train(2, again, 180);
  EXPECT_EQ(done_state_hash(resumed.err), done_state_hash(whole.err)) << resumed;
}

}  // namespace
}  // namespace mt::e2e
