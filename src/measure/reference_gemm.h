// reference_gemm.h — the reference product every throughput ratio is taken
// against: one 2048^3 GEMM at the step's precision, the best of five timed
// runs after a warm-up. `moetrain bench` ("gemm_best_gflops_per_s", and once
// after each step) and `moetrain doctor --write-cluster` (cpu.gemm_*_gflops)
// take it the same way, so a plan's rates and a bench's ratios share it.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/gemm.h"

namespace mt {

class ReferenceGemm {
 public:
  static constexpr int64_t kN = 2048;
  // One timed product, GFLOP/s.
  double gflops_once(MatmulPrecision p);
  // The best of five after a warm-up, GFLOP/s.
  double best_gflops(MatmulPrecision p);

 private:
  std::vector<float> a_ = std::vector<float>(size_t(kN * kN), 0.5f);
  std::vector<float> b_ = std::vector<float>(size_t(kN * kN), 0.25f);
  std::vector<float> c_ = std::vector<float>(size_t(kN * kN));
};

}  // namespace mt
