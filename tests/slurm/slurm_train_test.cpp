// slurm_train_test.cpp — `moetrain train` through scripts/slurm/train.sbatch
// on a real one-node Slurm (support/slurm_cluster.h): two ranks started by
// srun (PMIx) or by mpirun inside the allocation end with the state hash of
// `mpirun -np 2`; Slurm's advance notice (SIGUSR1 to the batch shell, as
// `--signal=B:USR1@LEAD` sends it) stops the run at a checkpoint with exit
// 75, the template requeues the job, and `scontrol requeue` (SIGTERM to
// every process) of the requeued job too; the third start ends with the
// uninterrupted bits. A task count that does not divide the batch is refused
// naming the key.
#include <gtest/gtest.h>

#include "support/mpi.h"
#include "support/slurm_cluster.h"

namespace mt::e2e {
namespace {

const std::vector<std::string> kArgs = {"--preset", "tiny-test", "--set", "train.steps=24"};

// The environment sbatch passes on to the job: the binary and the templates.
std::vector<std::string> job_env(const std::string& launcher) {
  return {"MOETRAIN=" + moetrain_binary(), "MT_SLURM_DIR=" MT_SOURCE_DIR "/scripts/slurm", "MT_LAUNCHER=" + launcher,
          "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};  // CI runs as root
}

std::string train_template() { return MT_SOURCE_DIR "/scripts/slurm/train.sbatch"; }

std::string reference_hash(const TempDir& tmp) {
  std::vector<std::string> a = kArgs;
  a.insert(a.end(), {"--run-dir", tmp / "ref"});
  const auto r = mpi_train(2, a, 180);
  EXPECT_EQ(r.exit_code, 0) << r;
  return done_state_hash(r.err);
}

// sbatch of the train template with `ntasks` tasks; the job id.
std::string submit(const SlurmCluster& slurm, const TempDir& tmp, const std::string& name, int ntasks,
                   const std::string& launcher, std::vector<std::string> extra = {},
                   const std::string& sbatch_opt = "--nodes=1") {
  std::vector<std::string> a = {sbatch_opt,      "-n", std::to_string(ntasks), "-o", tmp / (name + ".out"),
                                train_template()};
  a.insert(a.end(), kArgs.begin(), kArgs.end());
  a.insert(a.end(), {"--run-dir", tmp / name});
  a.insert(a.end(), extra.begin(), extra.end());
  std::string err;
  const std::string id = slurm.sbatch(a, &err, job_env(launcher));
  EXPECT_FALSE(id.empty()) << err;
  return id;
}

TEST(SlurmTrain, TwoRanksUnderSrunAndUnderMpirunEndWithTheMpirunStateHash) {
  TempDir tmp;
  SlurmCluster slurm;
  ASSERT_EQ(slurm.error(), "");
  const std::string want = reference_hash(tmp);
  ASSERT_FALSE(want.empty());
  for (const std::string launcher : {"srun", "mpirun"}) {
    SCOPED_TRACE(launcher);
    const std::string id = submit(slurm, tmp, launcher, 2, launcher);
    ASSERT_TRUE(slurm.wait_gone(id, 120)) << slurm.logs();
    const auto job = slurm.job(id);
    const std::string out = read_file(tmp / (launcher + ".out"));
    EXPECT_EQ(job.at("JobState"), "COMPLETED") << out;
    EXPECT_EQ(job.at("ExitCode"), "0:0") << out;
    EXPECT_EQ(done_state_hash(out), want) << out;
    // Two ranks, not one process: the metrics count them.
    const auto rows = read_metrics(tmp / launcher);
    ASSERT_EQ(rows.size(), 24u);
    EXPECT_EQ(rows.back()["comm"]["world_size"], 2) << rows.back().dump();
  }
}

TEST(SlurmTrain, AnAdvanceNoticeRequeuesFromTheCheckpointAndSoDoesScontrolRequeue) {
  TempDir tmp;
  SlurmCluster slurm;
  ASSERT_EQ(slurm.error(), "");
  const std::string want = reference_hash(tmp);
  // Steps slowed (0.5 s on rank 1; no math changes) so the signals land mid-run.
  const std::string id = submit(slurm, tmp, "run", 2, "srun", {"--inject-fault", "slow:1:1"});
  const std::string run = tmp / "run", out_path = tmp / "run.out";
  auto wait_steps = [&](size_t n) {
    const double t0 = now_s();
    while (read_metrics(run).size() < n && now_s() - t0 < 90) sleep_s(0.1);
    return read_metrics(run).size() >= n;
  };
  ASSERT_TRUE(wait_steps(3)) << read_file(out_path);
  // The notice, as Slurm sends it with --signal=B:USR1@LEAD.
  const auto sig = slurm.run({"/usr/bin/scancel", "--batch", "--signal=USR1", id});
  ASSERT_EQ(sig.exit_code, 0) << sig;
  // Stopped at a checkpoint, requeued, running again: past the stop.
  const double t0 = now_s();
  while (read_file(out_path).find("restart 1") == std::string::npos && now_s() - t0 < 90) sleep_s(0.1);
  std::string out = read_file(out_path);
  ASSERT_NE(out.find("restart 1"), std::string::npos) << out << slurm.logs();
  EXPECT_NE(out.find("stopped at a checkpoint (exit 75): requeueing"), std::string::npos) << out;
  const size_t stop = out.find("# stopped at step ");
  ASSERT_NE(stop, std::string::npos) << out;
  const int64_t stopped_at = std::stoll(out.substr(stop + 18));
  EXPECT_TRUE(fs::exists(ckpt_dir(run, stopped_at))) << out;
  // Now Slurm's own requeue: SIGTERM to every process of the job.
  ASSERT_TRUE(wait_steps(size_t(stopped_at) + 3)) << read_file(out_path);
  const auto rq = slurm.run({"/usr/bin/scontrol", "requeue", id});
  ASSERT_EQ(rq.exit_code, 0) << rq;
  ASSERT_TRUE(slurm.wait_gone(id, 150)) << read_file(out_path) << slurm.logs();
  out = read_file(out_path);
  const auto job = slurm.job(id);
  EXPECT_EQ(job.at("JobState"), "COMPLETED") << out;
  EXPECT_EQ(job.at("Restarts"), "2") << out;
  EXPECT_NE(out.find("restart 2"), std::string::npos) << out;
  // The SIGTERM of the requeue stopped the ranks at a checkpoint too (srun's steps).
  EXPECT_NE(out.find("(signal Terminated), checkpoint kept"), std::string::npos) << out;
  EXPECT_EQ(done_state_hash(out), want) << out;
}

TEST(SlurmTrain, ATaskCountThatDoesNotDivideTheBatchIsRefusedNamingTheKey) {
  TempDir tmp;
  SlurmCluster slurm;
  ASSERT_EQ(slurm.error(), "");
  // Three tasks on two CPUs (--overcommit); tiny-test's batch_size is 4.
  const std::string id = submit(slurm, tmp, "three", 3, "srun", {}, "--overcommit");
  ASSERT_TRUE(slurm.wait_gone(id, 120)) << slurm.logs();
  const std::string out = read_file(tmp / "three.out");
  EXPECT_EQ(slurm.job(id).at("JobState"), "FAILED") << out;
  EXPECT_NE(out.find("train.batch_size = 4 must be a multiple of the 3 ranks"), std::string::npos) << out;
  EXPECT_NE(out.find("SLURM_NTASKS = 3"), std::string::npos) << out;
}

}  // namespace
}  // namespace mt::e2e
