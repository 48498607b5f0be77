// step_bench.h — what `moetrain bench` measures, as a library: the machine's
// peak (FMA loops; AMX or AVX512-BF16 for bf16), the GEMM library's best
// (2048^3), then full training steps (forward + backward + optimizer) of a
// config on synthetic data: tokens/s, model GFLOP/s (model/flops.h: the
// assignments a step kept) and MFU against the peak measured in the same
// run, the reference GEMM again after each step (a shared host's rate moves
// with its neighbours), the time by phase, and the process's peak memory
// beside the planner's figure. With weight streaming the streamed trainer
// and an in-place one of the same config step alternately, so the overhead
// is a ratio of medians taken in one run. Under MPI every rank benchmarks
// its part of the distributed step; peaks are summed over the ranks.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "comm/comm.h"
#include "core/status.h"
#include "train/run_config.h"

namespace mt {

struct StepBenchOptions {
  std::string name;   // what is benchmarked (the preset's name), reported as "preset"
  int64_t steps = 4;  // timed steps after one warm-up step; medians are reported
};

// `cfg` is the resolved config to step (synthetic data; stream.* as given),
// on the threads set_num_threads gave this process.
// The result is the JSON object `moetrain bench --json` prints (its fields:
// docs/performance.md). Errors: the trainer could not be created.
Result<nlohmann::json> run_step_bench(const RunConfig& cfg, const StepBenchOptions& opt, Comm& world);

}  // namespace mt
