// cpu_profile.h — a CPU's measured figures as `moetrain doctor --write-cluster`
// gathers them (measure/cpu_measure.h runs the kernels), the fit of the
// planner's GEMM rate model to the measured model-shaped products, and the
// cluster file they make (configs/clusters/*.toml, [cpu] section; the keys are
// in docs/planner.md). Nothing here is fitted to a training step's time.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "plan/cluster.h"

namespace mt::plan {

// One measured pass over model-shaped products: the GEMMs the planner charges for it (perf.cpp, forward
// cost; the pass ran forward, input and weight gradients, so 3x) and the seconds it took.
struct GemmCall {
  double groups = 1, M = 0, N = 0, K = 0;  // `groups` equal problems in one kernel (grouped experts)
};
struct GemmSample {
  std::string name;  // "qkv 4096x768x512", ...
  std::vector<GemmCall> calls;
  double seconds = 0;  // median of the repeats, forward + both gradients
};

// The fit: time = 3 x sum over calls of groups x 2 M N K (K + k0) / K / (gemm x efficiency), least squares
// in log time over the samples (each product's relative error weighs the same); k0 on a grid of whole
// reduction steps in [0, 1024], efficiency in closed form for each. Returns {efficiency, k0}.
struct GemmFit {
  double efficiency = 0, k0 = 0;
  double rms_log_error = 0;  // of the fitted model over the samples
};
GemmFit fit_gemm_rate(const std::vector<GemmSample>& samples, double gemm_gflops);
// The fitted model's seconds for one sample.
double predicted_gemm_s(const GemmSample& s, double gemm_gflops, const GemmFit& f);

struct CpuPrecisionProfile {
  CpuRates rates;                                   // what goes into the file
  std::vector<GemmSample> samples;                  // the products the GEMM fit used (written as comments)
  double attention_fwd_s = 0, attention_bwd_s = 0;  // the attention measurement behind rates.attention_gflops
};

struct CpuProfile {
  std::string cpu;        // "AuthenticAMD family 25 model 17 (AMD EPYC)"
  std::string flags;      // the vector-ISA flags that matter: avx2 fma avx512f avx512_bf16 amx_tile ...
  std::string bf16_unit;  // machine_peak.h Bf16Peak::kind
  std::string date;       // YYYY-MM-DD
  std::string command;    // the command line that measured
  int64_t threads = 0;
  CpuPrecisionProfile fp32, bf16;
  double memory_gbps = 0;        // the optimizer kernel's streaming rate (planner byte count), GB/s
  double ram_gib = 0;            // available memory (MemAvailable)
  double kernel_latency_us = 0;  // a tiny product's time: the fixed cost per kernel call
};

// The cluster file: a header comment naming the CPU, the date and the command, [cluster], [gpu] (type
// "cpu", the bf16 peak, available RAM, the measured bandwidth), [efficiency] (hbm 1: the bandwidth is
// achieved; the measured kernel latency) and [cpu] with both precisions' rates; the GEMM samples and the
// fit's error as comments. parse_cluster reads it back to the same figures (tests/unit/plan_cpu_profile_test.cpp).
std::string cpu_cluster_toml(const CpuProfile& p);

}  // namespace mt::plan
