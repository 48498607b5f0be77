// doctor.h — the checks of `moetrain doctor` (docs/health.md) over a world
// of ranks: the GEMM probe against its fp64 reference and across ranks, a
// NaN scan, a memory pattern test, every link's latency and bandwidth, the
// ranks' wall clocks against rank 0's, and the binary each rank runs. Every
// rank runs every check and gets every row, so all reach the same verdict.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "core/status.h"

namespace mt {

struct DoctorOptions {
  int64_t bandwidth_bytes = 4 << 20;  // message size of the link test
  int64_t memory_mib = 256;           // memory tested per rank
  double timeout_s = 60;              // a link partner that does not answer in this time fails the run
};

struct DoctorRow {
  std::string check;  // gemm-reference, gemm-ranks-agree, nan-scan, memory, link, clock, binary
  int rank = -1;      // -1: a link row (detail names both ends)
  bool pass = true;
  double seconds = 0.0;
  std::string detail;
};

struct DoctorReport {
  std::vector<std::string> hosts;  // by rank
  std::vector<DoctorRow> rows;
  std::string slowest_link;           // "" with one rank
  std::vector<std::string> failures;  // "rank R (check)" or "link X <-> Y"
  std::vector<int> culprit_ranks;     // sorted
  bool ok() const { return failures.empty(); }
};

// Collective. An error: a link partner did not answer (nothing is left to
// gather; the caller ends the job).
Result<DoctorReport> run_doctor(Comm& world, const DoctorOptions& opt);

}  // namespace mt
