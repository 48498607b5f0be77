// rmsnorm_bench.cpp — the RMSNorm backward of one layer's norm, as the
// trainer calls it: N rows of C (argument 0: 4096 x 512, moe-512's
// pre-attention and pre-FFN norms; 1: 131072 x 64, its per-head q/k norms),
// dx and the weight gradient's column sums over every row. Bytes/s counts
// dy and x read twice (the row pass and the column pass) and dx written.
// Run: mt_kernel_bench --benchmark_filter=RmsNorm --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <vector>

#include "core/rng.h"
#include "kernels/cpu/rmsnorm.h"

namespace {

void BM_RmsNormBackward(benchmark::State& state) {
  const int64_t N = state.range(0) == 0 ? 4096 : 131072, C = state.range(0) == 0 ? 512 : 64;
  std::vector<float> x(N * C), dy(N * C), dx(N * C), y(N * C), w(C), dw(C, 0.0f), rstd(N);
  mt::fill_normal(x.data(), N * C, 1.0f, 5, 1);
  mt::fill_normal(dy.data(), N * C, 1.0f, 5, 2);
  mt::fill_normal(w.data(), C, 0.1f, 5, 3);
  mt::rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, 1e-6f);
  for (auto _ : state) {
    mt::rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), N, C, 0.0f);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * N * C * 4 * 5);
}
BENCHMARK(BM_RmsNormBackward)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
