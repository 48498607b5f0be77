// optimizer_bench.cpp — the AdamW step over 8M elements on one thread, the
// moments in fp32 (argument 0) or in bf16 with stochastic rounding (1):
// the kernel alone (adamw_update) and the optimizer's whole pass
// (Optimizer::update with the bf16 shadow refresh and the spent gradients
// zeroed, as the trainer calls it). Bytes/s counts what the pass must move:
// parameters, gradients and moments read; parameters and moments written
// (plus the shadow written and the gradients zeroed for the whole pass).
// Run: mt_kernel_bench --benchmark_filter=AdamW --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <vector>

#include "core/rng.h"
#include "core/threads.h"
#include "kernels/cpu/adamw.h"
#include "optim/optimizer.h"

namespace {

constexpr int64_t kN = int64_t(1) << 23;

void BM_AdamWKernel(benchmark::State& state) {
  const bool half = state.range(0) == 1;
  std::vector<float> p(kN), g(kN), m(half ? 0 : kN, 0.0f), v(half ? 0 : kN, 0.0f);
  std::vector<mt::bf16> m16(half ? kN : 0, mt::bf16{0}), v16(half ? kN : 0, mt::bf16{0});
  mt::fill_normal(p.data(), kN, 0.02f, 3, 1);
  mt::fill_normal(g.data(), kN, 1.0f, 3, 2);
  int64_t step = 0;
  for (auto _ : state) {
    ++step;
    const mt::AdamWParams a{1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, step};
    if (half)
      mt::adamw_update(p.data(), m16.data(), v16.data(), g.data(), kN, a, mt::StateDither{mt::dither_key(step), 0});
    else
      mt::adamw_update(p.data(), m.data(), v.data(), g.data(), kN, a);
    benchmark::ClobberMemory();
  }
  const double moment_bytes = half ? 2.0 : 4.0;
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(double(kN) * (4 + 4 + 4 + 4 * moment_bytes)));
  state.SetLabel(half ? "bf16 moments" : "fp32 moments");
}
BENCHMARK(BM_AdamWKernel)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_AdamWOptimizerPass(benchmark::State& state) {
  const bool half = state.range(0) == 1;
  mt::set_num_threads(1);
  mt::ParamLayout L;
  L.add("layers.0.mlp.w1", {2048, kN / 2048}, mt::ParamKind::kMatrix, 0);
  mt::OptimizerConfig c;
  c.state_precision = half ? mt::StatePrecision::kBf16 : mt::StatePrecision::kFp32;
  mt::LocalComm comm;
  mt::Optimizer opt(L, mt::AdamWConfig{}, c, 1e-3, comm);
  std::vector<float> p(kN), g(kN), grads(kN);
  std::vector<mt::bf16> shadow(kN);
  mt::fill_normal(p.data(), kN, 0.02f, 3, 1);
  mt::fill_normal(g.data(), kN, 1.0f, 3, 2);
  int64_t step = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::copy(g.begin(), g.end(), grads.begin());
    state.ResumeTiming();
    ++step;
    opt.update(p.data(), grads.data(), 1e-3, step, 1.0, shadow.data(), grads.data());
    benchmark::ClobberMemory();
  }
  const double moment_bytes = half ? 2.0 : 4.0;
  state.SetBytesProcessed(int64_t(state.iterations()) *
                          int64_t(double(kN) * (4 + 4 + 4 + 4 * moment_bytes + 2 /* shadow */ + 4 /* zeroed */)));
  state.SetLabel(half ? "bf16 moments" : "fp32 moments");
}
BENCHMARK(BM_AdamWOptimizerPass)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
