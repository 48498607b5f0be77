// slurm_supervise_test.cpp — `moetrain supervise` inside a real Slurm
// allocation (support/slurm_cluster.h), through scripts/slurm/supervise.sbatch:
// the hosts come from the allocation, the ranks are srun job steps, a killed
// rank is named with its host and step in events.jsonl, the job is
// relaunched from the newest checkpoint and ends with the bits of the
// uninterrupted `mpirun -np 2` run. Outside an allocation, the Slurm
// launcher and the allocation's hosts are refused naming SLURM_JOB_ID.
#include <gtest/gtest.h>

#include "support/mpi.h"
#include "support/slurm_cluster.h"

namespace mt::e2e {
namespace {

std::vector<std::string> train_args(std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"--preset",       "tiny-test",      "--set",
                                "train.steps=30", "--set",          "train.checkpoint_every=4",
                                "--set",          "train.threads=1"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

std::vector<nlohmann::json> events(const std::string& run) {
  std::vector<nlohmann::json> out;
  std::istringstream in(read_file(run + "/events.jsonl"));
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

TEST(SlurmSupervise, AKilledRankIsRelaunchedInsideTheAllocationWithTheUninterruptedBits) {
  TempDir tmp;
  SlurmCluster slurm;
  ASSERT_EQ(slurm.error(), "");
  std::vector<std::string> ref = train_args({"--run-dir", tmp / "ref"});
  const auto whole = mpi_train(2, ref, 180);
  ASSERT_EQ(whole.exit_code, 0) << whole;

  const std::string run = tmp / "run";
  std::vector<std::string> a = {"-n",
                                "2",
                                "-o",
                                tmp / "job.out",
                                MT_SOURCE_DIR "/scripts/slurm/supervise.sbatch",
                                "--run-dir",
                                run,
                                "--recovery",
                                "0",
                                "--heartbeat-timeout",
                                "60",
                                "--"};
  const auto train = train_args({"--inject-fault", "kill:1:10"});
  a.insert(a.end(), train.begin(), train.end());
  std::string err;
  const std::string id = slurm.sbatch(
      a, &err, {"MOETRAIN=" + moetrain_binary(), "MT_SLURM_DIR=" MT_SOURCE_DIR "/scripts/slurm", "MT_LAUNCHER=srun"});
  ASSERT_FALSE(id.empty()) << err;
  ASSERT_TRUE(slurm.wait_gone(id, 240)) << read_file(tmp / "job.out") << slurm.logs();
  const std::string out = read_file(tmp / "job.out");
  EXPECT_EQ(slurm.job(id).at("JobState"), "COMPLETED") << out;
  EXPECT_NE(out.find("finished at step 30"), std::string::npos) << out;

  int launches = 0, failures = 0;
  for (const auto& e : events(run)) {
    if (e["event"] == "launch") {
      ++launches;
      EXPECT_EQ(e["hosts"], slurm.host() + ":2") << e.dump();
    }
    if (e["event"] != "failure") continue;
    ++failures;
    EXPECT_EQ(e["rank"], 1) << e.dump();
    EXPECT_EQ(e["host"], slurm.host()) << e.dump();
    EXPECT_GE(e["step"].get<int64_t>(), 8) << e.dump();
  }
  EXPECT_EQ(launches, 2);
  EXPECT_EQ(failures, 1);
  // The srun launch: the first launch's log is srun's.
  EXPECT_NE(read_file(run + "/supervisor/launch_000.log").find("srun: error"), std::string::npos);
  std::string last;
  for (const std::string& f : list_dir(run + "/supervisor"))
    if (f.starts_with("launch_")) last = f;
  EXPECT_EQ(done_state_hash(read_file(run + "/supervisor/" + last)), done_state_hash(whole.err));
}

TEST(SlurmSupervise, OutsideAnAllocationTheSlurmLauncherIsRefusedNamingTheVariable) {
  TempDir tmp;
  write_file(tmp / "hosts", "n0 slots=2\n");
  // SLURM_JOB_ID empty: not inside an allocation, even when ctest itself runs in one.
  const std::vector<std::string> no_job = {"SLURM_JOB_ID="};
  const auto srun = run_process({moetrain_binary(), "supervise", "--launcher", "srun", "--hosts", tmp / "hosts",
                                 "--run-dir", tmp / "a", "--", "--preset", "tiny-test"},
                                30, no_job);
  EXPECT_EQ(srun.exit_code, 2) << srun;
  EXPECT_NE(srun.err.find("--launcher srun needs a Slurm allocation, and SLURM_JOB_ID is not set"), std::string::npos)
      << srun;
  const auto no_hosts =
      run_process({moetrain_binary(), "supervise", "--run-dir", tmp / "b", "--", "--preset", "tiny-test"}, 30, no_job);
  EXPECT_EQ(no_hosts.exit_code, 2) << no_hosts;
  EXPECT_NE(no_hosts.err.find("no --hosts (the allocation's hosts) needs a Slurm allocation"), std::string::npos)
      << no_hosts;
  EXPECT_FALSE(fs::exists(tmp / "a"));
  EXPECT_FALSE(fs::exists(tmp / "b"));
}

}  // namespace
}  // namespace mt::e2e
