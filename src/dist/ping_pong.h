// ping_pong.h — point-to-point latency and bandwidth between two ranks of
// the world, for `moetrain doctor` (finds the slow link or node). The Comm
// interface has only collectives, which the training step needs; this is
// the one place that sends point to point, through MPI directly, so MPI
// stays inside dist/. With a world of one there is no pair to measure.
#pragma once
#include <cstdint>

#include "core/status.h"
#include "comm/comm.h"

namespace mt {

struct LinkTiming {
  double latency_s = 0.0;       // half the median round trip of an 8-byte message
  double bandwidth_gbs = 0.0;   // message bytes / half the median round trip, GB/s
};

// Collective between world ranks `a` and `b` only (a != b; other ranks must
// not call it): `a` sends, `b` echoes, `iters` times per message size. A
// peer that does not answer within `timeout_s` is an error naming it.
Result<LinkTiming> ping_pong(Comm& world, int a, int b, int64_t bytes, int iters, double timeout_s);

}  // namespace mt
