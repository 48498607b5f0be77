// arch_measure.h — the factors `moetrain arch compare` measures on this
// machine, each a `moetrain` child process run while nothing else of the
// comparison runs: (a) `moetrain bench` of the candidate's benchmark config
// (tokens/s, MFU against the measured peak and against the best GEMM); (c)
// the same under `mpirun -np N` with dist.ep = N, whose comm_wait share of
// the step is the exposed all-to-all time (plus waiting for the slower rank);
// and the decode throughput of `moetrain generate` on the candidate's largest
// ladder rung. A launcher that is missing or refuses (mpirun can exit 0 when
// it does) gives a record with the reason, not an error.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "arch/arch_spec.h"
#include "core/status.h"

namespace mt {

struct MeasureContext {
  std::string moetrain;  // this binary
  std::string log_dir;   // children's stdout and stderr
};

// `moetrain bench --preset PRESET --set ... --json` (ranks = 1), or under
// `mpirun -np ranks` with dist.ep = ranks. The record: the bench JSON's
// figures, or {"skipped": reason} when the launch failed or gave no result.
Result<nlohmann::json> measure_bench(const MeasureContext& ctx, const ArchSpec& spec, const ArchCandidate& c,
                                     int64_t ranks);

// Greedy decoding of spec.decode_tokens tokens after a fixed prompt from the
// newest checkpoint of `run_dir`: prefill and decode tokens/s, KV cache bytes,
// and `run_name` (the run as the record names it: relative to the output directory).
Result<nlohmann::json> measure_decode(const MeasureContext& ctx, const ArchSpec& spec, const ArchCandidate& c,
                                      const std::string& run_dir, const std::string& run_name);

}  // namespace mt
