// slurm_ladder_test.cpp — a scaling ladder as a Slurm job array on a real
// one-node Slurm (support/slurm_cluster.h), one task per rung through
// scripts/slurm/ladder.sbatch, two tasks at once on the two CPUs: the
// tasks' merged results.jsonl is byte for byte the file `ladder run
// --jobs 1` writes. An unknown rung is refused naming it.
#include <gtest/gtest.h>

#include "support/slurm_cluster.h"

namespace mt::e2e {
namespace {

// Three tiny rungs, each with a half-budget cooldown branch (trained in its task).
std::string ladder_file(const std::string& dir) {
  const std::string path = dir + "/ladder.toml";
  write_file(path, std::string("[ladder]\nbase = \"") + MT_SOURCE_DIR +
                       "/configs/tiny-test.toml\"\n"
                       "set = [\"data.eval_frac=0.1\", \"train.threads=1\"]\n"
                       "tokens_per_param = 0.5\nhead_dim = 16\nexpert_ratio = 1.0\ncooldowns = [0.5]\n"
                       "[[rung]]\nname = \"r1\"\nd_model = 32\nn_layers = 1\n"
                       "[[rung]]\nname = \"r2\"\nd_model = 64\nn_layers = 1\n"
                       "[[rung]]\nname = \"r3\"\nd_model = 64\nn_layers = 2\n");
  return path;
}

TEST(SlurmLadder, AJobArrayOfRungsWritesTheResultsOfOneInvocation) {
  TempDir tmp;
  SlurmCluster slurm;
  ASSERT_EQ(slurm.error(), "");
  const std::string ladder = ladder_file(tmp.path());
  // Submitted first: the reference trains on the same CPUs meanwhile.
  std::string err;
  const std::string id =
      slurm.sbatch({"--array=0-2", "-o", tmp / "task-%a.out", MT_SOURCE_DIR "/scripts/slurm/ladder.sbatch", ladder,
                    "--out", tmp / "array"},
                   &err, {"MOETRAIN=" + moetrain_binary(), "MT_SLURM_DIR=" MT_SOURCE_DIR "/scripts/slurm"});
  ASSERT_FALSE(id.empty()) << err;
  const auto one =
      run_process({moetrain_binary(), "ladder", "run", ladder, "--out", tmp / "one", "--jobs", "1", "--no-progress"},
                  300, kPassiveOmp);
  ASSERT_EQ(one.exit_code, 0) << one;
  ASSERT_TRUE(slurm.wait_gone(id, 240)) << slurm.logs();
  for (const char* task : {"0", "1", "2"}) {
    const auto job = slurm.job(id + "_" + task);
    EXPECT_EQ(job.count("JobState") ? job.at("JobState") : "", "COMPLETED")
        << read_file(tmp / ("task-" + std::string(task) + ".out"));
  }
  const std::string want = read_file(tmp / "one/results.jsonl");
  EXPECT_EQ(std::count(want.begin(), want.end(), '\n'), 6);  // per rung: its branch, then the full run
  EXPECT_EQ(read_file(tmp / "array/results.jsonl"), want);
}

TEST(SlurmLadder, AnUnknownRungIsRefusedNamingIt) {
  TempDir tmp;
  const std::string ladder = ladder_file(tmp.path());
  for (const char* rung : {"r9", "3"}) {
    const auto r = run_process({moetrain_binary(), "ladder", "run", ladder, "--out", tmp / "out", "--rung", rung});
    EXPECT_EQ(r.exit_code, 2) << r;
    EXPECT_NE(r.err.find("--rung " + std::string(rung) + ": " + ladder + " has no rung of that name (r1, r2, r3)"),
              std::string::npos)
        << r;
  }
  EXPECT_FALSE(fs::exists(tmp / "out"));
}

}  // namespace
}  // namespace mt::e2e
