// rmsnorm_bench.cpp — the RMSNorm backward of one layer's norm, as the
// trainer calls it: N rows of C (argument 0: 4096 x 512, moe-512's
// pre-attention and pre-FFN norms; 1: 131072 x 64, its per-head q/k norms),
// dx and the weight gradient's column sums over every row. Bytes/s counts
// dy and x read twice (the row pass and the column pass) and dx written.
// BM_RmsNormBackwardFromMemory: the first shape with x and dy in memory, as
// in a step (six sets in turn, 96 MB), adding into dx.
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

// moe-512's shape with its operands in memory, as in a step: each call reads
// the next of 6 sets of x and dy (96 MB).
void BM_RmsNormBackwardFromMemory(benchmark::State& state) {
  const int64_t N = 4096, C = 512, sets = 6;
  std::vector<std::vector<float>> xs, dys;
  for (int64_t i = 0; i < sets; ++i) {
    xs.emplace_back(N * C);
    dys.emplace_back(N * C);
    mt::fill_normal(xs.back().data(), N * C, 1.0f, 5, uint64_t(10 + i));
    mt::fill_normal(dys.back().data(), N * C, 1.0f, 5, uint64_t(20 + i));
  }
  std::vector<float> dx(N * C), y(N * C), w(C), dw(C, 0.0f), rstd(N);
  mt::fill_normal(w.data(), C, 0.1f, 5, 3);
  mt::rmsnorm_forward(y.data(), rstd.data(), xs[0].data(), w.data(), N, C, 1e-6f);
  int64_t i = 0;
  for (auto _ : state) {
    const int64_t k = i++ % sets;
    mt::rmsnorm_backward(dx.data(), dw.data(), dys[size_t(k)].data(), xs[size_t(k)].data(), w.data(), rstd.data(), N, C,
                         1.0f);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * N * C * 4 * 4);
}
BENCHMARK(BM_RmsNormBackwardFromMemory)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
