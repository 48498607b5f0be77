// comm_test.cpp — MpiComm's collectives under mpirun -np 2 and -np 4. Run
// without MPI, the gtest cases launch this same binary as ranks
// (--mpi-worker); each rank checks exact results of allgatherv,
// alltoallv, the ordered reduce-scatter and allreduce, string gathers and
// the ep x fsdp mesh split, and prints one "rank R of N: ok" line. The
// driver requires every rank's line: mpirun's exit code alone proves nothing.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>

#include "comm/comm.h"
#include "dist/mesh.h"
#include "dist/mpi_comm.h"
#include "support/mpi.h"

namespace mt {
namespace {

std::string g_self;  // path of this executable

int failures = 0;
#define WORKER_CHECK(cond)                                                                 \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "rank check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                                          \
    }                                                                                      \
  } while (0)

// noinline: one rounding of the same expression on every rank, whatever FMA contraction the caller allows.
[[gnu::noinline]] float value(int rank, int64_t i) { return float(rank) * 0.25f + float(i) * 1e-3f + 0.1f; }

int worker() {
  std::unique_ptr<Comm> world = make_world_comm(60);
  const int P = world->size(), me = world->rank();
  // allgatherv with uneven counts (rank r contributes r + 1 elements).
  std::vector<int64_t> counts(P), displs(P);
  for (int r = 0; r < P; ++r) {
    counts[r] = r + 1;
    displs[r] = r ? displs[r - 1] + counts[r - 1] : 0;
  }
  std::vector<float> mine(me + 1), all(displs[P - 1] + counts[P - 1], -1.0f);
  for (int i = 0; i <= me; ++i) mine[i] = value(me, i);
  world->allgatherv(mine.data(), me + 1, all.data(), counts.data(), displs.data(), DType::kF32, "test");
  for (int r = 0; r < P; ++r)
    for (int i = 0; i <= r; ++i) WORKER_CHECK(all[displs[r] + i] == value(r, i));
  WORKER_CHECK(world->stats().bytes[size_t(CommKind::kAllGather)] ==
               4 * (int64_t(all.size()) - (me + 1)));

  // alltoallv: rank s sends s + d + 1 elements to rank d.
  std::vector<int64_t> sc(P), sd(P), rc(P), rd(P);
  int64_t so = 0, ro = 0;
  for (int r = 0; r < P; ++r) {
    sc[r] = me + r + 1;
    sd[r] = so;
    so += sc[r];
    rc[r] = r + me + 1;
    rd[r] = ro;
    ro += rc[r];
  }
  std::vector<float> send(so), recv(ro, -1.0f);
  for (int r = 0; r < P; ++r)
    for (int64_t i = 0; i < sc[r]; ++i) send[sd[r] + i] = value(me, 100 * r + i);
  world->alltoallv(send.data(), sc.data(), sd.data(), recv.data(), rc.data(), rd.data(), DType::kF32, "test");
  for (int s = 0; s < P; ++s)
    for (int64_t i = 0; i < rc[s]; ++i) WORKER_CHECK(recv[rd[s] + i] == value(s, 100 * me + i));

  // Reduce-scatter: rank-ordered float sums, identical to a serial sum.
  const int64_t S = 37;
  std::vector<int64_t> rcnt(P), rdis(P);
  for (int r = 0; r < P; ++r) {
    rdis[r] = S * r / P;
    rcnt[r] = S * (r + 1) / P - rdis[r];
  }
  std::vector<float> full(S), scratch(P * rcnt[me]), out(rcnt[me], 1.0f);
  for (int64_t i = 0; i < S; ++i) full[i] = value(me, i) * (me % 2 ? -3.0f : 1.0f);
  ReduceScatter rs;
  rs.start(*world, full.data(), rcnt.data(), rdis.data(), scratch.data());
  rs.finish(out.data(), ReduceScatter::Mode::kAccumulate, "test");
  for (int64_t i = 0; i < rcnt[me]; ++i) {
    float expect = 0.0f;
    for (int r = 0; r < P; ++r) {
      // volatile: rounded to float as the sender's buffer was, never fused into an FMA with the sum
      const volatile float v = value(r, rdis[me] + i) * (r % 2 ? -3.0f : 1.0f);
      expect = r == 0 ? v : expect + v;
    }
    WORKER_CHECK(out[i] == 1.0f + expect);
  }

  double x[2] = {double(me) + 0.5, 1.0};
  world->allreduce_sum(x, 2, "test");
  WORKER_CHECK(x[0] == double(P) * double(P - 1) / 2 + 0.5 * P && x[1] == double(P));
  const auto strs = world->allgather_strings(std::string(size_t(me), 'x') + "|", "test");
  for (int r = 0; r < P; ++r) WORKER_CHECK(strs[r] == std::string(size_t(r), 'x') + "|");

  // Mesh: ep groups are consecutive ranks, fsdp groups share an ep rank.
  if (P % 2 == 0) {
    Mesh mesh(*world, MeshShape{2, P / 2});
    WORKER_CHECK(mesh.ep().size() == 2 && mesh.ep().rank() == me % 2);
    WORKER_CHECK(mesh.fsdp().size() == P / 2 && mesh.fsdp().rank() == me / 2);
    double y = double(me);
    mesh.ep().allreduce_sum(&y, 1, "test");
    WORKER_CHECK(y == double((me / 2) * 2) + double((me / 2) * 2 + 1));
  }
  world->barrier("test");
  std::printf("comm_test rank %d of %d: %s\n", me, P, failures ? "FAILED" : "ok");
  std::fflush(stdout);
  return failures ? 1 : 0;
}

void expect_all_ranks_ok(int np) {
  const auto r = e2e::mpirun(np, {g_self, "--mpi-worker"}, 120);
  ASSERT_EQ(r.exit_code, 0) << r;
  for (int k = 0; k < np; ++k)
    EXPECT_NE(r.out.find(fmt::format("comm_test rank {} of {}: ok", k, np)), std::string::npos)
        << "rank " << k << " did not report success\n" << r;
}

TEST(MpiComm, CollectivesOnTwoRanks) { expect_all_ranks_ok(2); }
TEST(MpiComm, CollectivesOnFourRanks) { expect_all_ranks_ok(4); }

}  // namespace
}  // namespace mt

int main(int argc, char** argv) {
  mt::g_self = std::filesystem::read_symlink("/proc/self/exe").string();
  if (argc > 1 && std::strcmp(argv[1], "--mpi-worker") == 0) return mt::worker();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
