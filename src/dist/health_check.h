// health_check.h — does this rank's hardware compute, store and agree?
// (issue 10: devices that silently return wrong math). The checks here are
// pure functions of one process plus one collective verdict over the world;
// `moetrain doctor` (cli/cmd_doctor.cpp) runs all of them once, the trainer
// runs the GEMM check before training and every `health.every` steps.
//
// The GEMM probe multiplies fixed Philox inputs through the project's own
// gemm() and compares every output with a plain fp64 loop computed once per
// process (the stored reference). Error of an output is measured against
// sum_k |A_ik B_kj| (the scale of fp32 rounding, and immune to cancellation):
// fp32 accumulation over K = 256 stays near 1e-7 of it, while a device off
// by 1e-3 relative sits near 1e-3 * |C_ij| / sum|AB| ~ 1e-4. kGemmTolerance
// (1e-5) lies between the two by an order of magnitude on each side.
// Across ranks the outputs are compared bitwise (xxh64): the same binary on
// the same kind of CPU computes identical bits, whatever the thread count.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace mt {

class Comm;
class ConfigSchema;

// [health]: the periodic check of a training run.
struct HealthConfig {
  int64_t every = 0;      // run the GEMM check every N steps; 0 = never
  bool at_start = false;  // and once before the first step
  // With every: each rank also recomputes its neighbour's share of the last
  // micro-batch (pure FSDP, ep = 1) and the losses are compared bitwise.
  bool recompute = false;
};
void declare_keys(ConfigSchema& s, HealthConfig& c);

// The probe's fixed shape (C[M,N] = A[M,K] B[K,N], all dims above gemm's
// skinny-path threshold so it goes through the main oneDNN path).
constexpr int64_t kProbeM = 128, kProbeN = 128, kProbeK = 256;
constexpr double kGemmTolerance = 1e-5;

struct GemmProbe {
  double max_error = 0.0;   // max over outputs of |C - ref| / sum_k |A_ik B_kj|
  int64_t non_finite = 0;   // NaN / Inf outputs
  uint64_t hash = 0;        // xxh64 of C's bytes
  double seconds = 0.0;     // the gemm, comparison and hash (not the one-off reference)
  bool ok() const { return non_finite == 0 && max_error <= kGemmTolerance; }
};
GemmProbe run_gemm_probe();

// NaN and Inf entries of x[0, n).
int64_t count_non_finite(const float* x, int64_t n);

// Memory test: patterns written over a buffer and read back. Each 64-bit
// word i holds pattern ^ (i * golden ratio), so neighbouring words and
// address bits differ (a stuck or aliased address line shows up), and the
// four patterns (0, ~0, 0x55.., 0xAA..) set and clear every bit.
void fill_pattern(uint64_t* buf, int64_t n, uint64_t pattern);
int64_t count_pattern_mismatches(const uint64_t* buf, int64_t n, uint64_t pattern);
struct MemoryTest {
  int64_t bytes = 0, mismatches = 0;
  double seconds = 0.0;
  double gb_per_s = 0.0;  // bytes written and read, per second
};
MemoryTest run_memory_test(int64_t bytes);

// xxh64 of a file's contents (the running binary: /proc/self/exe).
Result<uint64_t> hash_file(const std::string& path);

// Ranks whose value differs from the most common one (ties: from the
// group holding the lowest rank). Empty when all agree.
std::vector<int> minority_ranks(const std::vector<std::string>& values);

// The GEMM probe on every rank of `world` (collective), the same verdict on
// each: culprits are ranks off the reference, with NaN/Inf, or whose hash
// differs from the majority's.
struct GemmVerdict {
  std::vector<int> culprits;  // sorted; empty = pass
  std::string message;        // why, naming each culprit ("" on a pass)
  double seconds = 0.0;       // this rank's wall time of the whole check
  std::vector<GemmProbe> probes;  // per rank
  bool ok() const { return culprits.empty(); }
};
GemmVerdict check_gemm_all_ranks(Comm& world);

std::string join_ranks(const std::vector<int>& ranks);  // "1, 3"

}  // namespace mt
