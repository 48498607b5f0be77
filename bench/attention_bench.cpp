// attention_bench.cpp — forward and backward of the attention kernel on the
// moe-512 shapes (B 8, H 8, Hkv 2, T 512, Dh 64), local (window 128) and
// global, with o and dout head-major (second argument 0) or token-major as
// the trainer passes them (1); third argument: the kernel (0 blocked fp32,
// attention.h; 1 matmul-tiled fp32 and 2 matmul-tiled bf16,
// attention_matmul.h). GFLOP/s counts 4·Dh per attended key forward, 8·Dh
// backward, so the tiled kernel's masked extra keys are not counted.
#include <benchmark/benchmark.h>

#include <vector>

#include "core/rng.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_matmul.h"

namespace {

struct Inputs {
  mt::AttentionDims d;
  std::vector<float> q, k, v, o, lse, dout, dq, dk, dv;
  Inputs(int64_t window, bool token_major) : d{8, 8, 2, 512, 64, window} {
    d.token_major_out = token_major;
    const int64_t nq = d.B * d.H * d.T * d.Dh, nk = d.B * d.Hkv * d.T * d.Dh;
    q.resize(nq); o.resize(nq); dout.resize(nq); dq.resize(nq);
    k.resize(nk); v.resize(nk); dk.resize(nk); dv.resize(nk);
    lse.resize(d.B * d.H * d.T);
    mt::fill_normal(q.data(), nq, 1.0f, 1, 1);
    mt::fill_normal(k.data(), nk, 1.0f, 1, 2);
    mt::fill_normal(v.data(), nk, 1.0f, 1, 3);
    mt::fill_normal(dout.data(), nq, 1.0f, 1, 4);
  }
  double keys() const { return mt::attention_mean_keys(d.T, d.window) * double(d.B * d.H * d.T); }
};

void forward(Inputs& in, int64_t kernel) {
  if (kernel == 0)
    mt::attention_forward(in.o.data(), in.lse.data(), in.q.data(), in.k.data(), in.v.data(), in.d);
  else
    mt::attention_matmul_forward(in.o.data(), in.lse.data(), in.q.data(), in.k.data(), in.v.data(), in.d,
                                 kernel == 1 ? mt::MatmulPrecision::kFp32 : mt::MatmulPrecision::kBf16);
}

void backward(Inputs& in, int64_t kernel) {
  if (kernel == 0)
    mt::attention_backward(in.dq.data(), in.dk.data(), in.dv.data(), in.dout.data(), in.q.data(), in.k.data(),
                           in.v.data(), in.o.data(), in.lse.data(), in.d);
  else
    mt::attention_matmul_backward(in.dq.data(), in.dk.data(), in.dv.data(), in.dout.data(), in.q.data(),
                                  in.k.data(), in.v.data(), in.o.data(), in.lse.data(), in.d,
                                  kernel == 1 ? mt::MatmulPrecision::kFp32 : mt::MatmulPrecision::kBf16);
}

void BM_AttentionForward(benchmark::State& state) {
  Inputs in(state.range(0), state.range(1) != 0);
  for (auto _ : state) forward(in, state.range(2));
  state.counters["GFLOPS"] =
      benchmark::Counter(4.0 * in.d.Dh * in.keys() * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void BM_AttentionBackward(benchmark::State& state) {
  Inputs in(state.range(0), state.range(1) != 0);
  forward(in, state.range(2));
  for (auto _ : state) backward(in, state.range(2));
  state.counters["GFLOPS"] =
      benchmark::Counter(8.0 * in.d.Dh * in.keys() * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

BENCHMARK(BM_AttentionForward)->ArgsProduct({{128, 0}, {0, 1}, {0, 1, 2}})->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttentionBackward)->ArgsProduct({{128, 0}, {0, 1}, {0, 1, 2}})->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
