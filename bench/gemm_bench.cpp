// gemm_bench.cpp — mt::gemm (oneDNN matmul) on the shapes of the moe-512
// preset, fp32 and bf16, forward and both backward products, plus a 2048^3
// best case. Run: mt_kernel_bench --benchmark_filter=gemm --benchmark_min_time=0.2
// Names read gemm/<shape>/<form>/<precision>; GFLOPS counts 2*M*N*K per call.
// The fp32 inputs of a bf16 product are converted on every call, as for an
// activation no producer wrote in the product's form. bwd_weight_formed and
// bwd_weight_pretransposed (bf16 only) give dW = dy^T x operands already in
// that form, as the trainer's products mostly read them: dy as stored (the
// product reads it transposed) and dy stored transposed, to show what the
// transposed first operand costs by itself. gemm/router/<form>_from_memory
// runs the router's products with their token-sized operand in memory;
// gemm/attn_out/fwd_residual_{copied,added} the output projection with its
// residual copied in first (beta 1) or added by gemm_add.
//
// moe-512: T tokens 4096, D 512, QKV out 768, expert hidden F 352 (gate+up
// fused: 2F = 704), about 640 rows per expert, V 8192 computed in chunks of
// 512 tokens, 16 experts for the router (fp32 only: it multiplies in fp32 at
// every precision, through gemm.cpp's skinny path).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/gemm.h"

namespace mt {
namespace {

// nn.Linear shape: y[M,N] = x[M,K] W[N,K]^T.
struct LinearShape {
  const char* name;
  int64_t M, N, K;
};

constexpr LinearShape kShapes[] = {
    {"qkv", 4096, 768, 512},            // x_TD -> qkv, all tokens
    {"attn_out", 4096, 512, 512},       // attention output projection
    {"delta_in", 4096, 2064, 512},      // gated-delta input projection: q|k|v|z and the two gates
    {"expert_gate_up", 640, 704, 512},  // one expert, fused gate+up
    {"expert_down", 640, 512, 352},     // one expert, down projection
    {"lm_head_chunk", 512, 8192, 512},  // 512 tokens of the vocab head
    {"router", 4096, 16, 512},          // the router's logits, always fp32: the skinny path (gemm.cpp)
    {"square2048", 2048, 2048, 2048},   // best case
};

enum class Form { kForward, kBackwardInput, kBackwardWeight };

std::vector<float> random_buffer(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

void bm_linear(benchmark::State& state, LinearShape s, Form form, MatmulPrecision p) {
  const int64_t M = s.M, N = s.N, K = s.K;
  std::vector<float> x = random_buffer(M * K, 1), w = random_buffer(N * K, 2),
                     y = random_buffer(M * N, 3);
  std::vector<float> dx(M * K), dw(N * K, 0.0f);
  for (auto _ : state) {
    switch (form) {
      case Form::kForward:
        linear_forward(y.data(), x.data(), w.data(), M, N, K, p);
        benchmark::DoNotOptimize(y.data());
        break;
      case Form::kBackwardInput:  // dx = dy W
        linear_backward_input(dx.data(), y.data(), w.data(), M, N, K, 0.0f, p);
        benchmark::DoNotOptimize(dx.data());
        break;
      case Form::kBackwardWeight:  // dW += dy^T x
        linear_backward_weight(dw.data(), y.data(), x.data(), M, N, K, p);
        benchmark::DoNotOptimize(dw.data());
        break;
    }
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPS"] =
      benchmark::Counter(2.0 * double(M) * double(N) * double(K) * double(state.iterations()) * 1e-9,
                         benchmark::Counter::kIsRate);
}

// dW[N,K] += dy^T x with bf16 operands in the products' form; `stored_transposed`:
// dy held as dy^T (N x M), so the product reads neither operand transposed.
void bm_weight_gradient_formed(benchmark::State& state, LinearShape s, bool stored_transposed) {
  const int64_t M = s.M, N = s.N, K = s.K;
  const std::vector<float> x = random_buffer(M * K, 1), dy = random_buffer(M * N, 3);
  std::vector<float> dy_t(M * N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) dy_t[j * M + i] = dy[i * N + j];
  const OperandForm f = operand_form(MatmulPrecision::kBf16);
  std::vector<float> xo(operand_floats(M * K, f)), dyo(operand_floats(M * N, f));
  write_operand(xo.data(), 0, x.data(), M * K, f);
  write_operand(dyo.data(), 0, (stored_transposed ? dy_t : dy).data(), M * N, f);
  const GemmShape shape{N, K, M, stored_transposed ? Trans::kNo : Trans::kYes, Trans::kNo};
  std::vector<float> dw(N * K, 0.0f);
  for (auto _ : state) {
    gemm(dw.data(), GemmInput(dyo.data(), f), GemmInput(xo.data(), f), shape, 1.0f, MatmulPrecision::kBf16);
    benchmark::DoNotOptimize(dw.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPS"] = benchmark::Counter(
      2.0 * double(M) * double(N) * double(K) * double(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
}

// The router's three products (fp32, the skinny kernel) with their
// token-sized operand in memory, as in a step, where the layer's input was
// written long before: each call reads the next of 12 copies (96 MB).
// The shape of that name in kShapes.
const LinearShape& shape_named(const std::string& name) {
  for (const LinearShape& s : kShapes)
    if (name == s.name) return s;
  std::abort();
}

void bm_router_cold(benchmark::State& state, Form form) {
  const LinearShape& s = shape_named("router");
  const int64_t M = s.M, N = s.N, K = s.K, copies = 12;
  std::vector<std::vector<float>> xs;
  for (int64_t i = 0; i < copies; ++i) xs.push_back(random_buffer(M * K, uint32_t(10 + i)));
  std::vector<float> dy = random_buffer(M * N, 3), w = random_buffer(N * K, 2), dw(N * K, 0.0f), y(M * N);
  int64_t i = 0;
  for (auto _ : state) {
    float* x = xs[size_t(i++ % copies)].data();
    switch (form) {
      case Form::kForward:
        linear_forward(y.data(), x, w.data(), M, N, K, MatmulPrecision::kFp32);
        break;
      case Form::kBackwardInput:  // dx += dy W, into the layer's input gradient
        linear_backward_input(x, dy.data(), w.data(), M, N, K, 1.0f, MatmulPrecision::kFp32);
        break;
      default:
        linear_backward_weight(dw.data(), dy.data(), x, M, N, K, MatmulPrecision::kFp32);
        break;
    }
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPS"] = benchmark::Counter(
      2.0 * double(M) * double(N) * double(K) * double(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
}

// The attention output projection with its residual, as a block adds it:
// x_mid = x_in + o Wo^T, by copying x_in into x_mid for a beta-1 product
// (adds = false, as before) or through gemm_add (adds = true). Six sets of
// buffers in turn, so the residual comes from memory as in a step.
void bm_residual(benchmark::State& state, MatmulPrecision p, bool adds) {
  const LinearShape& s = shape_named("attn_out");
  const int64_t M = s.M, N = s.N, K = s.K, sets = 6;
  std::vector<std::vector<float>> xs, outs;
  for (int64_t i = 0; i < sets; ++i) {
    xs.push_back(random_buffer(M * N, uint32_t(30 + i)));
    outs.emplace_back(M * N);
  }
  const std::vector<float> o = random_buffer(M * K, 1), w = random_buffer(N * K, 2);
  int64_t i = 0;
  for (auto _ : state) {
    const size_t k = size_t(i++ % sets);
    const GemmShape shape{M, N, K, Trans::kNo, Trans::kYes};
    if (adds) {
      gemm_add(outs[k].data(), o.data(), w.data(), shape, xs[k].data(), p);
    } else {
      std::copy(xs[k].begin(), xs[k].end(), outs[k].begin());
      gemm(outs[k].data(), o.data(), w.data(), shape, 1.0f, p);
    }
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPS"] = benchmark::Counter(
      2.0 * double(M) * double(N) * double(K) * double(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
}

// Registered at static-initialisation time; benchmark_main runs them.
int register_all() {
  const std::pair<Form, const char*> forms[] = {{Form::kForward, "fwd"},
                                                {Form::kBackwardInput, "bwd_input"},
                                                {Form::kBackwardWeight, "bwd_weight"}};
  const std::pair<MatmulPrecision, const char*> precisions[] = {{MatmulPrecision::kFp32, "fp32"},
                                                                {MatmulPrecision::kBf16, "bf16"}};
  for (const LinearShape& s : kShapes)
    for (auto [form, form_name] : forms) {
      // A square matrix has one shape for all three forms: forward is enough.
      if (s.M == s.N && s.N == s.K && form != Form::kForward) continue;
      for (auto [p, p_name] : precisions) {
        if (s.N <= 32 && p != MatmulPrecision::kFp32) continue;  // the router multiplies in fp32 only
        std::string name = std::string("gemm/") + s.name + "/" + form_name + "/" + p_name;
        // oneDNN runs on the OpenMP threads: rate by wall time, not this
        // thread's CPU time.
        benchmark::RegisterBenchmark(name.c_str(), bm_linear, s, form, p)
            ->UseRealTime()
            ->Unit(benchmark::kMicrosecond);
      }
    }
  for (auto [p, p_name] : precisions)
    for (bool adds : {false, true}) {
      const std::string name = std::string("gemm/attn_out/fwd_residual_") + (adds ? "added" : "copied") + "/" + p_name;
      benchmark::RegisterBenchmark(name.c_str(), bm_residual, p, adds)->UseRealTime()->Unit(benchmark::kMicrosecond);
    }
  for (auto [form, form_name] : forms) {
    const std::string name = std::string("gemm/router/") + form_name + "_from_memory/fp32";
    benchmark::RegisterBenchmark(name.c_str(), bm_router_cold, form)->UseRealTime()->Unit(benchmark::kMicrosecond);
  }
  for (const LinearShape& s : kShapes) {
    if ((s.M == s.N && s.N == s.K) || s.N <= 32) continue;
    for (bool transposed : {false, true}) {
      const std::string name =
          std::string("gemm/") + s.name + (transposed ? "/bwd_weight_pretransposed/bf16" : "/bwd_weight_formed/bf16");
      benchmark::RegisterBenchmark(name.c_str(), bm_weight_gradient_formed, s, transposed)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  return 0;
}

const int registered = register_all();

}  // namespace
}  // namespace mt
