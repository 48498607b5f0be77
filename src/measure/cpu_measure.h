// cpu_measure.h — measures this CPU for the planner (`moetrain doctor
// --write-cluster`): the peaks and the 2048^3 reference as `moetrain bench`
// takes them, the model-shaped products the GEMM rate model is fitted to, the
// attention and gated-delta kernels, the optimizer kernel's memory bandwidth,
// a tiny product's fixed cost and the available memory, all on the threads
// set_num_threads gave this process (the trainer's). Kernel-level only: no
// training step is timed, so `plan` against `bench` is a real check.
#pragma once
#include <cstdint>
#include <string>

#include "core/status.h"
#include "plan/cpu_profile.h"

namespace mt {

struct CpuMeasureOptions {
  int64_t tokens = 4096;  // rows of the measured products: the bench presets' batch x sequence (8 x 512)
  int64_t repeats = 3;    // timed repeats per product after one warm-up; the median counts
  std::string command;    // written into the file's header
};

Result<plan::CpuProfile> measure_cpu_profile(const CpuMeasureOptions& opt);

}  // namespace mt
