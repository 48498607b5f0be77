// experts_bench.cpp — one MoE layer's routed experts, forward and backward.
// First argument: 0 one SwiGLU MLP per expert (swiglu_ffn.h, three
// multi-threaded GEMM calls each way), 1 the grouped kernel
// (grouped_swiglu.h); second: 0 fp32, 1 bf16; third, the layer:
// 0 moe-512's (16 experts, F 352, D 512; 4096 tokens × top-2 in segments of
// 448 to 640 rows), 1 the same compute split fine-grained (64 experts,
// F 88, top-8: the same segments, four times as many); fourth, the weights:
// 0 plain buffers (a bf16 product converts them on every call), 1 held as
// the trainer holds them (measure/trainer_weights.h: bf16 shadow, packed
// copies made once per iteration, as once per step; the weight gradients
// written, not added, as a step's first micro-batch does: grad_ledger.h).
// GFLOP/s counts 6·F·D per row forward and twice that backward.
// Run: mt_kernel_bench --benchmark_filter=Experts --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "core/rng.h"
#include "kernels/cpu/grouped_swiglu.h"
#include "measure/trainer_weights.h"
#include "model/swiglu_ffn.h"

namespace {

constexpr int64_t kD = 512;

struct Layer {
  int64_t experts, F;
  std::vector<int64_t> begin{0};
  std::vector<float> x, y, h13, z, dy, dx, dh13, dz, w, dw13, dw2;  // w: every expert's W13, then every W2
  std::unique_ptr<mt::TrainerWeights> held;
  std::vector<const float*> w13p, w2p;
  std::vector<mt::WeightGrad> dw13p, dw2p;
  Layer(bool fine, bool trainer_held, mt::MatmulPrecision p) : experts(fine ? 64 : 16), F(fine ? 88 : 352) {
    // Uneven loads as routing gives them, in 16-row steps.
    for (int64_t i = 0; i < experts; ++i) begin.push_back(begin.back() + 448 + 16 * ((5 * i) % 13));
    const int64_t R = begin.back();
    x.resize(R * kD); y.resize(R * kD); dy.resize(R * kD); dx.resize(R * kD);
    h13.resize(R * 2 * F); dh13.resize(R * 2 * F); z.resize(R * F); dz.resize(R * F);
    const int64_t w13n = experts * 2 * F * kD, w2n = experts * kD * F;
    w.resize(w13n + w2n);
    dw13.resize(w13n);
    dw2.resize(w2n);
    mt::fill_normal(x.data(), int64_t(x.size()), 1.0f, 2, 1);
    mt::fill_normal(dy.data(), int64_t(dy.size()), 1.0f, 2, 2);
    mt::fill_normal(w.data(), w13n, 0.04f, 2, 3);
    mt::fill_normal(w.data() + w13n, w2n, 0.05f, 2, 4);
    if (trainer_held) held = std::make_unique<mt::TrainerWeights>(std::move(w), p);
    float* wp = held ? held->data() : w.data();
    for (int64_t i = 0; i < experts; ++i) {
      w13p.push_back(wp + i * 2 * F * kD);
      w2p.push_back(wp + w13n + i * kD * F);
      const float beta = trainer_held ? 0.0f : 1.0f;
      dw13p.push_back({dw13.data() + i * 2 * F * kD, beta});
      dw2p.push_back({dw2.data() + i * kD * F, beta});
    }
  }
  mt::ExpertGroup group() const { return {experts, begin.data(), F, kD, w13p.data(), w2p.data()}; }

  void forward(bool grouped, mt::MatmulPrecision p) {
    if (held) held->new_step();
    if (grouped) return mt::grouped_swiglu_forward(y.data(), h13.data(), z.data(), x.data(), group(), p);
    for (int64_t i = 0; i < experts; ++i) {
      const int64_t b = begin[i];
      mt::swiglu_ffn_forward(y.data() + b * kD, h13.data() + b * 2 * F, z.data() + b * F, x.data() + b * kD,
                             w13p[i], w2p[i], {begin[i + 1] - b, F, kD}, 0.0f, p);
    }
  }
  void backward(bool grouped, mt::MatmulPrecision p) {
    if (held) held->new_step();
    if (grouped)
      return mt::grouped_swiglu_backward(dx.data(), dw13p.data(), dw2p.data(), dh13.data(), dy.data(), x.data(),
                                         h13.data(), z.data(), group(), p);
    for (int64_t i = 0; i < experts; ++i) {
      const int64_t b = begin[i];
      mt::swiglu_ffn_backward(dx.data() + b * kD, dw13p[i], dw2p[i], dz.data(), dh13.data(), dy.data() + b * kD,
                              x.data() + b * kD, h13.data() + b * 2 * F, z.data() + b * F, w13p[i], w2p[i],
                              {begin[i + 1] - b, F, kD}, 0.0f, p);
    }
  }
};

mt::MatmulPrecision precision(const benchmark::State& s) {
  return s.range(1) == 0 ? mt::MatmulPrecision::kFp32 : mt::MatmulPrecision::kBf16;
}

void BM_ExpertsForward(benchmark::State& state) {
  Layer l(state.range(2) == 1, state.range(3) == 1, precision(state));
  l.forward(state.range(0) == 1, precision(state));  // primitives created outside the timing
  for (auto _ : state) {
    l.forward(state.range(0) == 1, precision(state));
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPS"] = benchmark::Counter(6e-9 * l.F * kD * double(l.begin.back()) * double(state.iterations()),
                                                benchmark::Counter::kIsRate);
}

void BM_ExpertsBackward(benchmark::State& state) {
  Layer l(state.range(2) == 1, state.range(3) == 1, precision(state));
  l.forward(state.range(0) == 1, precision(state));
  l.backward(state.range(0) == 1, precision(state));
  for (auto _ : state) {
    l.backward(state.range(0) == 1, precision(state));
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPS"] = benchmark::Counter(12e-9 * l.F * kD * double(l.begin.back()) * double(state.iterations()),
                                                benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK(BM_ExpertsForward)
    ->ArgsProduct({{0, 1}, {0, 1}, {0, 1}, {0, 1}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExpertsBackward)
    ->ArgsProduct({{0, 1}, {0, 1}, {0, 1}, {0, 1}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
