// reference_gemm.cpp — see reference_gemm.h.
#include "measure/reference_gemm.h"

#include <algorithm>

#include "core/timer.h"

namespace mt {

double ReferenceGemm::gflops_once(MatmulPrecision p) {
  const double t0 = now_seconds();
  gemm(c_.data(), a_.data(), b_.data(), GemmShape{kN, kN, kN}, 0.0f, p);
  return 2.0 * double(kN * kN * kN) / (now_seconds() - t0) / 1e9;
}

double ReferenceGemm::best_gflops(MatmulPrecision p) {
  gflops_once(p);  // warm-up: plans the primitive, touches the pages
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) best = std::max(best, gflops_once(p));
  return best;
}

}  // namespace mt
