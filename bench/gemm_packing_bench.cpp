// gemm_packing_bench.cpp — what packing the weights once would buy (issue 41,
// item 1): oneDNN's matmul on moe-512's weight shapes with the weights in
// their plain row-major layout (what mt::gemm passes today: the primitive
// reorders them into its blocked layout inside every call) against the same
// primitive fed weights reordered once into the layout it asks for
// (format_tag::any). Run:
//   mt_kernel_bench --benchmark_filter=gemm_packing --benchmark_repetitions=3
// Names read gemm_packing/<shape>/<fwd|dx>/<precision>/<plain|packed>;
// GFLOPS counts 2*M*N*K per call. fwd is y = x W^T, dx is dx = dy W.
// gemm_packing/pack/<shape>/<fwd|dx>/<precision>/<onednn|ours> times the
// packing itself, on one thread as the experts' tasks pack (their weights in
// cache): oneDNN's reorder against weight_pack.h's copies into the same
// layout; GB/s counts the packed bytes written.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstdint>
#include <cstring>
#include <dnnl.hpp>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/weight_pack.h"

namespace mt {
namespace {

using dt = dnnl::memory::data_type;

struct WeightShape {
  const char* name;
  int64_t M, N, K;  // fwd: x (M, K) times W^T, W (N, K); dx: dy (M, N) times W
};

constexpr WeightShape kShapes[] = {
    {"qkv", 4096, 768, 512},                 // all tokens' q|k|v
    {"expert_gate_up_tile", 160, 704, 512},  // one expert's row tile (gemm_on_thread), fused gate+up
    {"expert_down_tile", 160, 512, 352},     // one expert's row tile, down projection
    {"expert_gate_up", 640, 704, 512},       // one expert's rows at once
    {"lm_head_chunk", 512, 8192, 512},       // 512 tokens of the vocab head
};

// The product's operands: the weight W (N, K) row-major; fwd reads it as B = W^T (K x N, strides {1, K}),
// dx as B = W (N x K); b_any lets the primitive choose B's layout.
struct ProductDescs {
  int64_t M, K, N;
  dnnl::memory::desc a_md, c_md, b_plain, b_any;
  ProductDescs(const WeightShape& s, bool dx, dt type)
      : M(s.M),
        K(dx ? s.N : s.K),
        N(dx ? s.K : s.N),
        a_md({M, K}, type, dnnl::memory::format_tag::ab),
        c_md({M, N}, dt::f32, dnnl::memory::format_tag::ab),
        b_plain({K, N}, type, dx ? dnnl::memory::dims{N, 1} : dnnl::memory::dims{1, K}),
        b_any({K, N}, type, dnnl::memory::format_tag::any) {}
};

void bm_packing(benchmark::State& state, WeightShape s, bool dx, dt type, bool packed) {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const ProductDescs d(s, dx, type);
  const int64_t M = d.M, K = d.K, N = d.N;
  const dnnl::memory::desc &a_md = d.a_md, &c_md = d.c_md, &b_plain = d.b_plain, &b_any = d.b_any;
  dnnl::matmul::primitive_desc pd;
  try {
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, packed ? b_any : b_plain, c_md), eng);
  } catch (const dnnl::error&) {  // no bf16 matmul on this CPU (AVX2 only)
    state.SkipWithError("no matmul of this precision on this CPU");
    return;
  }
  const dnnl::matmul prim(pd);
  dnnl::memory a(a_md, eng), b(b_plain, eng), c(c_md, eng);
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (dnnl::memory* m : {&a, &b}) {  // random fp32 values, then bf16 by truncation where asked
    const size_t n = m->get_desc().get_size() / (type == dt::f32 ? 4 : 2);
    if (type == dt::f32) {
      float* p = static_cast<float*>(m->get_data_handle());
      for (size_t i = 0; i < n; ++i) p[i] = u(gen);
    } else {
      uint16_t* p = static_cast<uint16_t*>(m->get_data_handle());
      for (size_t i = 0; i < n; ++i) {
        const float f = u(gen);
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        p[i] = uint16_t(bits >> 16);
      }
    }
  }
  dnnl::memory b_used = b;
  if (packed) {  // once, outside the timed loop: what a per-step packing would amortise
    b_used = dnnl::memory(pd.weights_desc(), eng);
    dnnl::reorder(b, b_used).execute(strm, b, b_used);
    strm.wait();
  }
  const std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b_used}, {DNNL_ARG_DST, c}};
  for (auto _ : state) {
    prim.execute(strm, args);
    strm.wait();
  }
  state.counters["GFLOPS"] =
      benchmark::Counter(2.0 * double(M) * double(N) * double(K), benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
  state.SetLabel(pd.impl_info_str());
}

void bm_pack(benchmark::State& state, WeightShape s, bool dx, dt type, bool ours) {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const ProductDescs d(s, dx, type);
  const dnnl::memory::desc& b_plain = d.b_plain;
  dnnl::memory::desc layout;
  try {
    layout = dnnl::matmul::primitive_desc(dnnl::matmul::desc(d.a_md, d.b_any, d.c_md), eng).weights_desc();
  } catch (const dnnl::error&) {
    state.SkipWithError("no matmul of this precision on this CPU");
    return;
  }
  if (ours && !blocked_layout_of(layout)) {
    state.SkipWithError("this CPU's layout is packed by oneDNN's reorder");
    return;
  }
  std::vector<uint8_t> src(b_plain.get_size(), 0x3f), dst(layout.get_size());
  dnnl::memory from(b_plain, eng, src.data()), to(layout, eng, dst.data());
  const dnnl::reorder reorder(from, to);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);  // as an expert task packs: one thread, for both
  for (auto _ : state) {
    if (ours)
      pack_weight(dst.data(), layout, src.data(), b_plain, eng, strm);
    else
      reorder.execute(strm, from, to), strm.wait();
    benchmark::ClobberMemory();
  }
  omp_set_num_threads(threads);
  state.counters["GB/s"] = benchmark::Counter(double(layout.get_size()), benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
}

const bool registered = [] {
  for (const WeightShape& s : kShapes)
    for (bool dx : {false, true})
      for (dt type : {dt::f32, dt::bf16}) {
        const std::string at = std::string(s.name) + (dx ? "/dx/" : "/fwd/") + (type == dt::f32 ? "fp32/" : "bf16/");
        for (bool packed : {false, true})
          benchmark::RegisterBenchmark(("gemm_packing/" + at + (packed ? "packed" : "plain")).c_str(), bm_packing, s,
                                       dx, type, packed)
              ->Unit(benchmark::kMicrosecond);
        for (bool ours : {false, true})
          benchmark::RegisterBenchmark(("gemm_packing/pack/" + at + (ours ? "ours" : "onednn")).c_str(), bm_pack, s, dx,
                                       type, ours)
              ->Unit(benchmark::kMicrosecond);
      }
  return true;
}();

}  // namespace
}  // namespace mt
