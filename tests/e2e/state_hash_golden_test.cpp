// state_hash_golden_test.cpp — the one-process runs of support/state_hash_golden.h
// end in the state hashes recorded before the restructuring, on the CPUs
// they were recorded on (tests/mpi/state_hash_golden_mpi_test.cpp: the MPI run).
#include <gtest/gtest.h>

#include "support/e2e.h"
#include "support/state_hash_golden.h"

namespace mt::e2e {
namespace {

TEST(StateHashGolden, OneProcessRunsKeepTheirBits) {
  const auto it = golden_hashes().find(cpu_key());
  TempDir tmp;
  std::string missing;
  for (const GoldenRun& g : golden_runs()) {
    if (g.ranks != 1) continue;
    SCOPED_TRACE(g.name);
    std::vector<std::string> args = g.args;
    args.insert(args.end(), {"--run-dir", tmp / g.name});
    const auto r = train(args, 300, kPassiveOmp);
    ASSERT_EQ(r.exit_code, 0) << r;
    const std::string got = done_state_hash(r.err);
    ASSERT_FALSE(got.empty()) << r;
    if (it == golden_hashes().end()) {
      missing += std::string("        {\"") + g.name + "\", \"" + got + "\"},\n";
      continue;
    }
    EXPECT_EQ(got, it->second.at(g.name));
  }
  if (!missing.empty())
    GTEST_SKIP() << "no hashes recorded for this CPU (\"" << cpu_key() << "\"); this build gives:\n" << missing;
}

}  // namespace
}  // namespace mt::e2e
