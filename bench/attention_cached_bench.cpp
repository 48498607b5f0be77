// attention_cached_bench.cpp — the KV-cache attention of `generate` and
// `eval --tasks`: the prefill of one long prompt in chunks of 256 rows (the
// decoder's max_rows) against everything before them, the shape of the
// long-context experiment's model (H 4, Hkv 2, Dh 40) at the first
// argument's prompt length; second argument the cache dtype (0 fp32, 1
// bf16). Time is per prompt; GFLOP/s counts 4·Dh per attended key.
#include <benchmark/benchmark.h>

#include <vector>

#include "core/bf16.h"
#include "core/rng.h"
#include "kernels/cpu/attention_cached.h"

namespace {

template <typename T>
void prefill(benchmark::State& state) {
  const int64_t P = state.range(0), R = 256, H = 4, Hkv = 2, Dh = 40;
  mt::CachedAttentionDims d{R, H, Hkv, Dh, P, 0};
  std::vector<float> q(size_t(R * H * Dh)), k(size_t(R * Hkv * Dh)), v(size_t(R * Hkv * Dh)), o(q.size());
  mt::fill_normal(q.data(), int64_t(q.size()), 1.0f, 1, 1);
  mt::fill_normal(k.data(), int64_t(k.size()), 1.0f, 1, 2);
  mt::fill_normal(v.data(), int64_t(v.size()), 1.0f, 1, 3);
  std::vector<float> cache_f(size_t(Hkv * P * Dh));
  mt::fill_normal(cache_f.data(), int64_t(cache_f.size()), 1.0f, 1, 4);
  std::vector<T> kc(cache_f.size()), vc(cache_f.size());
  for (size_t i = 0; i < cache_f.size(); ++i) {
    if constexpr (std::is_same_v<T, float>) {
      kc[i] = vc[i] = cache_f[i];
    } else {
      kc[i] = vc[i] = mt::f32_to_bf16(cache_f[i]);
    }
  }
  std::vector<int32_t> seq(static_cast<size_t>(R), 0);
  std::vector<int64_t> pos(static_cast<size_t>(R)), first(static_cast<size_t>(R));
  double keys = 0;
  for (auto _ : state) {
    for (int64_t c0 = 0; c0 < P; c0 += R) {  // the prompt's chunks, each against the positions before it
      const int64_t n = std::min(R, P - c0);
      d.N = n;
      for (int64_t r = 0; r < n; ++r) pos[size_t(r)] = c0 + r, first[size_t(r)] = 0;
      mt::attention_cached_forward(o.data(), q.data(), k.data(), v.data(), kc.data(), vc.data(), seq.data(), pos.data(),
                                   first.data(), d);
      for (int64_t r = 0; r < n; ++r) keys += double(H) * double(c0 + r + 1);
    }
    benchmark::DoNotOptimize(o.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(keys * 4.0 * double(Dh) * 1e-9, benchmark::Counter::kIsRate);
}

void BM_AttentionCachedPrefill(benchmark::State& state) {
  if (state.range(1) == 0)
    prefill<float>(state);
  else
    prefill<mt::bf16>(state);
}

}  // namespace

BENCHMARK(BM_AttentionCachedPrefill)->ArgsProduct({{512, 2048}, {0, 1}})->UseRealTime()->Unit(benchmark::kMillisecond);
