// ping_pong.cpp — see ping_pong.h. Non-blocking sends and receives polled
// against a deadline, so a dead peer becomes a message instead of a hang.
#include "dist/ping_pong.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <vector>

#include "core/check.h"
#include "core/timer.h"

namespace mt {
namespace {

constexpr int kTag = 7101;  // distinct from mpi_comm.cpp's liveness tags

Status wait_for(MPI_Request* req, int peer, double deadline) {
  for (;;) {
    int done = 0;
    MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (done) return Status::ok();
    if (now_seconds() > deadline) {
      MPI_Cancel(req);
      return Status::errorf("rank {} did not answer a ping-pong in time (hung, dead or a very slow link)", peer);
    }
  }
}

// Median round trip of `iters` exchanges of `bytes` (plus one warm-up).
Result<double> round_trip(int me, int peer, bool initiator, int64_t bytes, int iters, double timeout_s) {
  MT_CHECK(bytes > 0 && bytes <= INT_MAX, "ping_pong: message of {} bytes", bytes);
  std::vector<char> buf(static_cast<size_t>(bytes), static_cast<char>(me));
  std::vector<double> times;
  const double deadline = now_seconds() + timeout_s;
  for (int i = 0; i <= iters; ++i) {
    const double t0 = now_seconds();
    MPI_Request req;
    for (int leg = 0; leg < 2; ++leg) {
      if ((leg == 0) == initiator) MPI_Isend(buf.data(), int(bytes), MPI_BYTE, peer, kTag, MPI_COMM_WORLD, &req);
      else MPI_Irecv(buf.data(), int(bytes), MPI_BYTE, peer, kTag, MPI_COMM_WORLD, &req);
      Status s = wait_for(&req, peer, deadline);
      if (!s) return s;
    }
    if (i > 0) times.push_back(now_seconds() - t0);
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

}  // namespace

Result<LinkTiming> ping_pong(Comm& world, int a, int b, int64_t bytes, int iters, double timeout_s) {
  const int me = world.rank();
  MT_CHECK(a != b && (me == a || me == b), "ping_pong({}, {}) called on rank {}", a, b, me);
  MT_CHECK(dynamic_cast<LocalComm*>(&world) == nullptr, "ping_pong needs an MPI world");
  const int peer = me == a ? b : a;
  LinkTiming t;
  auto small = round_trip(me, peer, me == a, 8, std::max(iters, 20), timeout_s);
  if (!small) return small.status();
  auto big = round_trip(me, peer, me == a, bytes, iters, timeout_s);
  if (!big) return big.status();
  t.latency_s = small.value() / 2;
  t.bandwidth_gbs = double(bytes) / (big.value() / 2) / 1e9;
  return t;
}

}  // namespace mt
