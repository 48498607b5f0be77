// attention_bench.cpp — forward and backward of the attention kernel on the
// moe-512 shapes (B 8, H 8, Hkv 2, T 512, Dh 64), local (window 128) and
// global, with o and dout head-major (second argument 0) or token-major as
// the trainer passes them (1); third argument: the kernel (0 blocked fp32,
// attention.h; 1 matmul-tiled fp32 and 2 matmul-tiled bf16,
// attention_matmul.h). GFLOP/s counts 4·Dh per attended key forward, 8·Dh
// backward, so the tiled kernel's masked extra keys are not counted.
// BM_AttentionDocuments: the attention phase (forward + backward, token-major)
// of one 4K-token row, GQA 4:1, packed with documents of the first argument's
// length and masked (document masking), or unmasked (0); second argument the
// kernel as above. Its time ratio is the masked kernel's saving.
#include <benchmark/benchmark.h>

#include <vector>

#include "core/rng.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_matmul.h"

namespace {

struct Inputs {
  mt::AttentionDims d;
  std::vector<float> q, k, v, o, lse, dout, dq, dk, dv;
  std::vector<int32_t> starts;
  Inputs(int64_t window, bool token_major) : Inputs(mt::AttentionDims{8, 8, 2, 512, 64, window}, token_major, 0) {}
  Inputs(mt::AttentionDims shape, bool token_major, int64_t doc_tokens) : d(shape) {
    d.token_major_out = token_major;
    if (doc_tokens > 0) {
      starts.resize(size_t(d.B * d.T));
      for (int64_t n = 0; n < d.B * d.T; ++n) starts[size_t(n)] = int32_t(n % d.T / doc_tokens * doc_tokens);
      d.doc_start = starts.data();
    }
    const int64_t nq = d.B * d.H * d.T * d.Dh, nk = d.B * d.Hkv * d.T * d.Dh;
    q.resize(nq); o.resize(nq); dout.resize(nq); dq.resize(nq);
    k.resize(nk); v.resize(nk); dk.resize(nk); dv.resize(nk);
    lse.resize(d.B * d.H * d.T);
    mt::fill_normal(q.data(), nq, 1.0f, 1, 1);
    mt::fill_normal(k.data(), nk, 1.0f, 1, 2);
    mt::fill_normal(v.data(), nk, 1.0f, 1, 3);
    mt::fill_normal(dout.data(), nq, 1.0f, 1, 4);
  }
  double keys() const { return mt::attention_keys(d.doc_start, d.B, d.T, d.window) * double(d.H); }
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

void BM_AttentionDocuments(benchmark::State& state) {
  Inputs in(mt::AttentionDims{1, 8, 2, 4096, 64, 0}, true, state.range(0));
  for (auto _ : state) {
    forward(in, state.range(1));
    backward(in, state.range(1));
  }
  state.counters["GFLOPS"] =
      benchmark::Counter(12.0 * in.d.Dh * in.keys() * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

BENCHMARK(BM_AttentionDocuments)->ArgsProduct({{0, 256, 1024}, {0, 1, 2}})->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttentionForward)->ArgsProduct({{128, 0}, {0, 1}, {0, 1, 2}})->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttentionBackward)->ArgsProduct({{128, 0}, {0, 1}, {0, 1, 2}})->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
