// heartbeat.h — what a supervised rank is doing, for the supervisor
// (`moetrain supervise`): each rank keeps DIR/rank_R.json current (pid,
// host, step, phase, wall time), replaced atomically at every step's start
// and end. A heartbeat older than the supervisor's timeout is a hang, and it
// names the rank and what it was doing.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/file_system.h"

namespace mt {

struct Heartbeat {
  int64_t rank = -1, pid = 0, step = 0;
  std::string host, phase;  // phase: "starting", "step", "checkpoint", "done"
  double time = 0;          // seconds since the epoch
  // The rank's last finished step: its wall time and the part of it spent
  // waiting for other ranks (-1: none yet). A straggler waits least.
  double step_s = -1, wait_s = -1;
};

// Best effort: a heartbeat that cannot be written is reported once on
// stderr. Replaced atomically (a reader never sees a torn file), not synced.
void write_heartbeat(const std::string& dir, const Heartbeat& h, FileSystem& fs = default_file_system());
// Every rank_*.json in DIR (unreadable ones are skipped).
std::vector<Heartbeat> read_heartbeats(const std::string& dir);
double wall_seconds();

}  // namespace mt
