// state_hash_golden_mpi_test.cpp — the MPI run of support/state_hash_golden.h
// (mpirun -np 2, dist.ep = 2: experts split, the rest sharded) ends in the
// state hash recorded before the restructuring, on the CPUs it was recorded on.
#include <gtest/gtest.h>

#include "support/e2e.h"
#include "support/mpi.h"
#include "support/state_hash_golden.h"

namespace mt::e2e {
namespace {

TEST(StateHashGoldenMpi, DistributedRunKeepsItsBits) {
  const auto it = golden_hashes().find(cpu_key());
  TempDir tmp;
  for (const GoldenRun& g : golden_runs()) {
    if (g.ranks == 1) continue;
    SCOPED_TRACE(g.name);
    std::vector<std::string> args = g.args;
    args.insert(args.end(), {"--run-dir", tmp / g.name});
    const auto r = mpi_train(g.ranks, args, 300);
    ASSERT_EQ(r.exit_code, 0) << r;
    const std::string got = done_state_hash(r.err);
    ASSERT_FALSE(got.empty()) << r;  // mpirun's exit code alone proves nothing
    if (it == golden_hashes().end())
      GTEST_SKIP() << "no hashes recorded for this CPU (\"" << cpu_key() << "\"); " << g.name << " gives " << got;
    EXPECT_EQ(got, it->second.at(g.name));
  }
}

}  // namespace
}  // namespace mt::e2e
