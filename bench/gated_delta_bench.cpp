// gated_delta_bench.cpp — the gated delta rule (kernels/cpu/gated_delta.h) on one moe-512-hybrid
// layer's shapes (B 8, H 8, T 512, Dk = Dv 64, chunks of 64): the chunked forward, and the backward
// with the first argument selecting the kernel (0 chunked, as the layer runs it; 1 the step-by-step
// sequential reference), so both backwards are timed in one run. The last argument: 1 multiplies
// the chunks in bf16 (GatedDeltaDims::bf16_products, as the layer at bf16 precision; fp32 where the
// build has no AVX512-BF16). Inputs as the layer feeds them: unit q, k rows, decays in (-0.6, 0),
// beta in (0, 1).
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "core/rng.h"
#include "kernels/cpu/gated_delta.h"

namespace {

struct Inputs {
  mt::GatedDeltaDims d{8, 8, 512, 64, 64, 64};
  std::vector<float> q, k, v, g, beta, o, states, dout, dq, dk, dv, dg, dbeta;
  explicit Inputs(bool bf16) {
    d.bf16_products = bf16;
    const int64_t rows = d.B * d.H * d.T, nk = rows * d.Dk, nv = rows * d.Dv;
    q.resize(nk), k.resize(nk), dq.resize(nk), dk.resize(nk);
    v.resize(nv), o.resize(nv), dout.resize(nv), dv.resize(nv);
    g.resize(rows), beta.resize(rows), dg.resize(rows), dbeta.resize(rows);
    states.resize(size_t(d.B * d.H * mt::gated_delta_chunks(d) * d.Dv * d.Dk));
    mt::fill_normal(q.data(), nk, 1.0f, 1, 1);
    mt::fill_normal(k.data(), nk, 1.0f, 1, 2);
    mt::fill_normal(v.data(), nv, 1.0f, 1, 3);
    mt::fill_normal(g.data(), rows, 1.0f, 1, 4);
    mt::fill_normal(beta.data(), rows, 1.0f, 1, 5);
    mt::fill_normal(dout.data(), nv, 1.0f, 1, 6);
    for (std::vector<float>* x : {&q, &k})
      for (int64_t r = 0; r < rows; ++r) {
        float s = 0.0f;
        for (int64_t e = 0; e < d.Dk; ++e) s += (*x)[r * d.Dk + e] * (*x)[r * d.Dk + e];
        for (int64_t e = 0; e < d.Dk; ++e) (*x)[r * d.Dk + e] /= std::sqrt(s);
      }
    for (int64_t r = 0; r < rows; ++r) {
      g[r] = -0.3f * (1.0f + std::tanh(g[r]));
      beta[r] = 1.0f / (1.0f + std::exp(-beta[r]));
    }
    forward();
  }
  void forward() {
    mt::gated_delta_forward(o.data(), states.data(), q.data(), k.data(), v.data(), g.data(), beta.data(), d);
  }
  double tokens() const { return double(d.B * d.T); }
};

void BM_GatedDeltaForward(benchmark::State& state) {
  Inputs in(state.range(0) == 1);
  for (auto _ : state) in.forward();
  state.counters["tokens/s"] =
      benchmark::Counter(in.tokens() * double(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_GatedDeltaBackward(benchmark::State& state) {
  Inputs in(state.range(1) == 1);
  auto backward = state.range(0) == 0 ? mt::gated_delta_backward : mt::gated_delta_backward_sequential;
  for (auto _ : state)
    backward(in.dq.data(), in.dk.data(), in.dv.data(), in.dg.data(), in.dbeta.data(), in.dout.data(), in.q.data(),
             in.k.data(), in.v.data(), in.g.data(), in.beta.data(), in.states.data(), in.d);
  state.counters["tokens/s"] =
      benchmark::Counter(in.tokens() * double(state.iterations()), benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK(BM_GatedDeltaForward)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GatedDeltaBackward)
    ->Args({0, 0})
    ->Args({0, 1})
    ->Args({1, 0})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
