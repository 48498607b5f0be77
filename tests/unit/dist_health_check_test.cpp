// dist_health_check_test.cpp — the pure health checks (dist/health_check.h):
// the GEMM probe passes clean and fails with the injected 1e-3 error, the
// NaN scan, the memory test's pattern checker, majority voting, and the
// world-of-one verdict naming rank 0.
#include "dist/health_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "comm/comm.h"
#include "kernels/cpu/gemm_fault.h"
#include "train/fault_injection.h"

namespace mt {
namespace {

// Turns the injected error off however the test ends.
struct InjectedGemmError {
  explicit InjectedGemmError(double rel) { gemm_inject_relative_error(rel); }
  ~InjectedGemmError() { gemm_inject_relative_error(0.0); }
};

TEST(HealthCheck, GemmProbePassesCleanWithMarginBelowTolerance) {
  const GemmProbe p = run_gemm_probe();
  EXPECT_TRUE(p.ok());
  EXPECT_EQ(p.non_finite, 0);
  // fp32 accumulation over K = 256 lands near 1e-7 of sum|AB|: at least 10x
  // below the tolerance, so the check does not cry wolf.
  EXPECT_LT(p.max_error, kGemmTolerance / 10) << p.max_error;
  // Deterministic: the same bits every time.
  EXPECT_EQ(run_gemm_probe().hash, p.hash);
}

TEST(HealthCheck, GemmProbeCatchesOneInAThousandRelativeError) {
  const uint64_t clean = run_gemm_probe().hash;
  InjectedGemmError wrong(kInjectedGemmError);
  const GemmProbe p = run_gemm_probe();
  EXPECT_FALSE(p.ok());
  EXPECT_GT(p.max_error, 10 * kGemmTolerance) << p.max_error;
  EXPECT_NE(p.hash, clean);
}

TEST(HealthCheck, GemmProbeCatchesNaN) {
  InjectedGemmError wrong(NAN);
  const GemmProbe p = run_gemm_probe();
  EXPECT_EQ(p.non_finite, kProbeM * kProbeN);
  EXPECT_FALSE(p.ok());
}

TEST(HealthCheck, CountNonFinite) {
  std::vector<float> x(1000, 1.0f);
  EXPECT_EQ(count_non_finite(x.data(), int64_t(x.size())), 0);
  x[3] = NAN;
  x[500] = INFINITY;
  x[999] = -INFINITY;
  EXPECT_EQ(count_non_finite(x.data(), int64_t(x.size())), 3);
}

TEST(HealthCheck, MemoryPatternsDetectAFlippedBit) {
  std::vector<uint64_t> buf(4096);
  for (uint64_t p : {uint64_t(0), ~uint64_t(0), uint64_t(0x5555555555555555ull)}) {
    fill_pattern(buf.data(), int64_t(buf.size()), p);
    EXPECT_EQ(count_pattern_mismatches(buf.data(), int64_t(buf.size()), p), 0);
    buf[1234] ^= uint64_t(1) << 17;
    EXPECT_EQ(count_pattern_mismatches(buf.data(), int64_t(buf.size()), p), 1);
  }
  // Neighbouring words differ (an aliased address line would show).
  fill_pattern(buf.data(), int64_t(buf.size()), 0);
  EXPECT_NE(buf[0], buf[1]);
  const MemoryTest m = run_memory_test(8 << 20);
  EXPECT_EQ(m.bytes, 8 << 20);
  EXPECT_EQ(m.mismatches, 0);
  EXPECT_GT(m.gb_per_s, 0.0);
}

TEST(HealthCheck, MinorityRanks) {
  EXPECT_TRUE(minority_ranks({"a", "a", "a"}).empty());
  EXPECT_EQ(minority_ranks({"a", "b", "a", "a"}), (std::vector<int>{1}));
  EXPECT_EQ(minority_ranks({"b", "a", "a"}), (std::vector<int>{0}));
  EXPECT_EQ(minority_ranks({"a", "b"}), (std::vector<int>{1}));  // a tie keeps rank 0's group
  EXPECT_EQ(join_ranks({1, 3}), "1, 3");
}

TEST(HealthCheck, WorldOfOneVerdictNamesTheRank) {
  LocalComm world;
  EXPECT_TRUE(check_gemm_all_ranks(world).ok());
  InjectedGemmError wrong(kInjectedGemmError);
  const GemmVerdict v = check_gemm_all_ranks(world);
  EXPECT_EQ(v.culprits, (std::vector<int>{0}));
  EXPECT_NE(v.message.find("rank 0: GEMM check failed: off the reference"), std::string::npos) << v.message;
}

TEST(HealthCheck, HashFile) {
  auto h = hash_file("/proc/self/exe");
  ASSERT_TRUE(h.is_ok()) << h.status().message();
  EXPECT_EQ(hash_file("/proc/self/exe").value(), h.value());
  EXPECT_FALSE(hash_file("/nonexistent/moetrain").is_ok());
}

}  // namespace
}  // namespace mt
