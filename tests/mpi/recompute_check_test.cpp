// recompute_check_test.cpp — health.recompute under mpirun -np 3: every rank
// recomputes the next rank's slice of the last micro-batch; a clean run
// agrees to the bit at every check, and a rank whose GEMMs are off by 1e-3
// from step 5 is named at the next check (step 6) from the two slices it
// disagrees on, before the GEMM probe runs.
#include <gtest/gtest.h>

#include "support/e2e.h"
#include "support/mpi.h"

namespace mt::e2e {
namespace {

std::vector<std::string> args(const std::string& dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"--preset", "tiny-test", "--run-dir", dir, "--set", "train.threads=1",
                                "--set", "train.batch_size=6", "--set", "model.capacity_factor=1.0",
                                "--set", "train.steps=12", "--set", "health.every=2", "--set", "health.recompute=true"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST(RecomputeCheck, CleanRanksAgreeToTheBit) {
  TempDir tmp;
  const auto r = mpi_train(3, args(tmp / "a"), 180);
  EXPECT_NE(r.err.find("# done: step 12"), std::string::npos) << r;
  EXPECT_NE(r.err.find("# health checks: 6 passed"), std::string::npos) << r;
}

TEST(RecomputeCheck, AWrongMathRankIsNamedFromTheTrainingPath) {
  TempDir tmp;
  const auto r = mpi_train(3, args(tmp / "a", {"--inject-fault", "wronggemm:1:5"}), 180);
  EXPECT_NE(r.err.find("step 6: health check failed, culprit rank 1: a micro-batch recomputed on another rank"),
            std::string::npos)
      << r;
  EXPECT_EQ(r.err.find("# done: step 12"), std::string::npos) << r;
  const std::string events = read_file(tmp / "a/events.jsonl");
  EXPECT_NE(events.find("\"check\":\"recompute\""), std::string::npos) << events;
}

}  // namespace
}  // namespace mt::e2e
