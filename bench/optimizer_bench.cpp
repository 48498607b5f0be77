// optimizer_bench.cpp — the AdamW step over 8M elements on one thread, the
// moments in fp32 (argument 0) or in bf16 with stochastic rounding (1):
// the kernel alone (adamw_update) and the optimizer's whole pass
// (Optimizer::update with the bf16 shadow refresh and the spent gradients
// zeroed, as the trainer calls it). Bytes/s counts what the pass must move:
// parameters, gradients and moments read; parameters and moments written
// (plus the shadow written and the gradients zeroed for the whole pass).
// BM_AdamWPackedPass is the trainer's whole update on all threads: 96
// expert-sized matrices (34.6M parameters, more than the caches hold), each
// with the two packed GEMM copies a step's products read (forward and input
// gradient), refilled as each matrix becomes final (gemm_pack_final_weights);
// bf16 products (argument 1) also refresh the shadow the copies pack from.
// Run: mt_kernel_bench --benchmark_filter=AdamW --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <vector>

#include "core/rng.h"
#include "core/threads.h"
#include "kernels/cpu/adamw.h"
#include "kernels/cpu/gemm.h"
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

// The timed loop of the whole-pass benchmarks: each iteration restores the
// gradients (untimed: the pass zeroes them) and runs one update; with
// on_final, the packed copies it filled become current, as in the trainer.
void time_updates(benchmark::State& state, mt::Optimizer& opt, std::vector<float>& p, const std::vector<float>& g,
                  std::vector<float>& grads, mt::bf16* shadow, const mt::Optimizer::FinalRange& on_final = {}) {
  int64_t step = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::copy(g.begin(), g.end(), grads.begin());
    state.ResumeTiming();
    ++step;
    opt.update(p.data(), grads.data(), 1e-3, step, 1.0, shadow, grads.data(), on_final);
    if (on_final) mt::gemm_weights_changed();
    benchmark::ClobberMemory();
  }
}

void BM_AdamWOptimizerPass(benchmark::State& state) {
  const bool half = state.range(0) == 1;
  const int threads = mt::num_threads();
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
  time_updates(state, opt, p, g, grads, shadow.data());
  mt::set_num_threads(threads);  // the benchmarks after this one run on the machine's threads
  const double moment_bytes = half ? 2.0 : 4.0;
  state.SetBytesProcessed(int64_t(state.iterations()) *
                          int64_t(double(kN) * (4 + 4 + 4 + 4 * moment_bytes + 2 /* shadow */ + 4 /* zeroed */)));
  state.SetLabel(half ? "bf16 moments" : "fp32 moments");
}
BENCHMARK(BM_AdamWOptimizerPass)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_AdamWPackedPass(benchmark::State& state) {
  const mt::MatmulPrecision prec = state.range(0) == 1 ? mt::MatmulPrecision::kBf16 : mt::MatmulPrecision::kFp32;
  constexpr int64_t kMatrices = 96, kOut = 704, kIn = 512, kRows = 64;
  mt::ParamLayout L;
  for (int64_t e = 0; e < kMatrices; ++e)
    L.add("layers.0.mlp.experts." + std::to_string(e) + ".w13", {kOut, kIn}, mt::ParamKind::kMatrix, 0);
  const int64_t n = L.total();
  mt::LocalComm comm;
  mt::Optimizer opt(L, mt::AdamWConfig{}, mt::OptimizerConfig{}, 1e-3, comm);
  std::vector<float> p(n), g(n), grads(n);
  std::vector<mt::bf16> shadow(prec == mt::MatmulPrecision::kBf16 ? n : 0);
  mt::fill_normal(p.data(), n, 0.02f, 3, 1);
  mt::fill_normal(g.data(), n, 1.0f, 3, 2);
  mt::bf16* sh = shadow.empty() ? nullptr : shadow.data();
  if (sh) mt::convert_f32_to_bf16_span(sh, p.data(), n);
  mt::gemm_register_packed_weights(p.data(), n);
  mt::gemm_register_bf16_shadow(p.data(), sh, n);
  // One forward and one input-gradient product per matrix create its two copies.
  std::vector<float> x(kRows * kIn), y(kRows * kOut), dx(kRows * kIn);
  mt::fill_normal(x.data(), int64_t(x.size()), 1.0f, 3, 3);
  for (int64_t e = 0; e < kMatrices; ++e) {
    const float* w = p.data() + e * kOut * kIn;
    mt::linear_forward(y.data(), x.data(), w, kRows, kOut, kIn, prec);
    mt::linear_backward_input(dx.data(), y.data(), w, kRows, kOut, kIn, 0.0f, prec);
  }
  const mt::Optimizer::FinalRange pack = [](const float* q, int64_t len) { mt::gemm_pack_final_weights(q, len); };
  time_updates(state, opt, p, g, grads, sh, pack);
  state.counters["packed_MB"] = double(mt::gemm_packed_bytes()) / 1e6;
  mt::gemm_register_bf16_shadow(nullptr, nullptr, 0);
  mt::gemm_unregister_packed_weights(p.data());
  state.SetItemsProcessed(int64_t(state.iterations()) * n);
  state.SetLabel(prec == mt::MatmulPrecision::kBf16 ? "bf16 products" : "fp32 products");
}
BENCHMARK(BM_AdamWPackedPass)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
