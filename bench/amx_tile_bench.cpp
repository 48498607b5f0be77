// amx_tile_bench.cpp — what AMX delivers on this machine once its operands
// come from memory: a 2 x 2 block of fp32 accumulator tiles stepping over
// K with two A tiles (16 rows x 32 bf16) and two B tiles (16 VNNI rows of
// 16 x 2 bf16) loaded per step, from panels of K = 128, 512 or 2048
// (16 KiB, 64 KiB, 256 KiB: L1, L2, L2). `moetrain bench`'s AMX peak keeps
// every operand in tiles; this is the rate a GEMM built on packed panels
// could approach, beside what oneDNN's matmul reaches on the model's
// shapes (gemm_bench.cpp; docs/performance.md). One thread.
// Run: mt_kernel_bench --benchmark_filter=AmxTiles
#include <benchmark/benchmark.h>

#if defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__linux__)
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

namespace {

struct TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

bool amx_allowed() {
  constexpr int kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

void BM_AmxTilesFromCache(benchmark::State& state) {
  if (!amx_allowed()) return state.SkipWithError("the kernel refused the AMX tile state (arch_prctl)");
  const int64_t steps = state.range(0) / 32;  // K in steps of 32
  std::vector<uint16_t> a(size_t(2 * 512 * steps), 0x3a83), b(a.size(), 0x3a83);  // bf16 ~1e-3
  alignas(64) float c[256];
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  _tile_loadconfig(&cfg);
  int64_t tile_steps = 0;
  for (auto _ : state) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t k = 0; k < steps; ++k) {
      _tile_loadd(4, &a[size_t(2 * k) * 512], 64);
      _tile_loadd(5, &a[size_t(2 * k + 1) * 512], 64);
      _tile_loadd(6, &b[size_t(2 * k) * 512], 64);
      _tile_loadd(7, &b[size_t(2 * k + 1) * 512], 64);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, c, 64);
    benchmark::DoNotOptimize(c);
    tile_steps += steps;
  }
  _tile_release();
  // Per step: four 16 x 16 x 32 products.
  state.counters["GFLOPS"] = benchmark::Counter(double(tile_steps) * 4 * 16 * 16 * 32 * 2 / 1e9,
                                                benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AmxTilesFromCache)->Arg(128)->Arg(512)->Arg(2048);

}  // namespace
#endif
