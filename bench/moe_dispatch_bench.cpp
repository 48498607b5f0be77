// moe_dispatch_bench.cpp — the permutations around the experts on moe-512's
// shapes (4,096 tokens of 512, top-2 of 16 experts, capacity 1.25, routing
// spread evenly at random): gather (argument 0), combine (1), combine's
// backward (2) and gather's backward (3); the combine added onto the residual
// stream in one pass (4, moe_combine_add) and as it was done before, into a
// buffer and then added (5). Their rows come from random places
// of buffers the step wrote long before, so each call works on the next of
// six sets of buffers (over 300 MB): the rows come from memory, as in a step.
// Run: mt_kernel_bench --benchmark_filter=MoeDispatch --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "core/rng.h"
#include "kernels/cpu/moe_dispatch.h"

namespace {

constexpr int64_t kTokens = 4096, kDim = 512, kExperts = 16, kTopK = 2, kSets = 6;

struct Routing {
  std::vector<int32_t> slot, row_token;
  std::vector<int64_t> begin, kept;
  std::vector<float> gate;
  int64_t rows = 0;
};

Routing route() {
  Routing r;
  std::vector<int32_t> idx(kTokens * kTopK);
  std::vector<float> scores(kTokens * kExperts, 0.0f), gate(kTokens * kTopK);  // scores: every expert's
  std::mt19937 gen(7);
  for (int64_t n = 0; n < kTokens; ++n) {
    const int32_t a = int32_t(gen() % kExperts);
    int32_t b = int32_t(gen() % (kExperts - 1));
    b += b >= a ? 1 : 0;
    idx[size_t(n * kTopK)] = a;
    idx[size_t(n * kTopK + 1)] = b;
    scores[size_t(n * kExperts + a)] = gate[size_t(n * kTopK)] = 0.6f;
    scores[size_t(n * kExperts + b)] = gate[size_t(n * kTopK + 1)] = 0.4f;
  }
  const mt::DispatchDims d{kTokens, kExperts, kTopK, 512, 80, 16};
  r.slot.resize(kTokens * kTopK);
  r.begin.resize(kExperts + 1);
  r.kept.resize(kExperts);
  r.row_token.resize(size_t(mt::moe_max_rows(d)));
  mt::moe_assign(r.slot.data(), r.begin.data(), r.row_token.data(), r.kept.data(), idx.data(), scores.data(), d);
  r.rows = r.begin[kExperts];
  r.gate = gate;
  return r;
}

void BM_MoeDispatch(benchmark::State& state) {
  const Routing r = route();
  std::vector<std::vector<float>> tokens(kSets), experts(kSets), experts_grad(kSets);
  for (int64_t i = 0; i < kSets; ++i) {
    tokens[size_t(i)].resize(kTokens * kDim);
    experts[size_t(i)].resize(r.rows * kDim);
    experts_grad[size_t(i)].resize(r.rows * kDim);
    mt::fill_normal(tokens[size_t(i)].data(), kTokens * kDim, 1.0f, 9, uint64_t(i));
    mt::fill_normal(experts[size_t(i)].data(), r.rows * kDim, 1.0f, 9, uint64_t(10 + i));
  }
  std::vector<float> dgate(kTokens * kTopK), comb(kTokens * kDim), out(kTokens * kDim);
  int64_t i = 0;
  for (auto _ : state) {
    const size_t k = size_t(i++ % kSets);
    float *x = tokens[k].data(), *xe = experts[k].data(), *dxe = experts_grad[k].data();
    switch (state.range(0)) {
      case 0:
        mt::moe_gather(xe, x, r.row_token.data(), r.rows, kDim, kDim);
        break;
      case 1:
        mt::moe_combine(x, xe, r.slot.data(), r.gate.data(), kTokens, kTopK, kDim, 0.0f);
        break;
      case 2:
        mt::moe_combine_backward(dxe, dgate.data(), x, xe, r.slot.data(), r.gate.data(), r.row_token.data(), r.rows,
                                 kTokens, kTopK, kDim);
        break;
      case 3:
        mt::moe_gather_backward(x, xe, r.slot.data(), kTokens, kTopK, kDim);
        break;
      case 4:
        mt::moe_combine_add(out.data(), x, xe, r.slot.data(), r.gate.data(), kTokens, kTopK, kDim);
        break;
      default: {
        mt::moe_combine(comb.data(), xe, r.slot.data(), r.gate.data(), kTokens, kTopK, kDim, 0.0f);
        float* o = out.data();
        const float* c = comb.data();
#pragma omp parallel for simd schedule(static)
        for (int64_t e = 0; e < kTokens * kDim; ++e) o[e] = x[e] + c[e];
      }
    }
    benchmark::ClobberMemory();
  }
  static const char* kNames[] = {"gather",          "combine",         "combine backward",
                                 "gather backward", "combine and add", "combine, then add"};
  state.SetLabel(kNames[state.range(0)]);
}
BENCHMARK(BM_MoeDispatch)->DenseRange(0, 5)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
