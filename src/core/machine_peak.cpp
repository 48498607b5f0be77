// machine_peak.cpp — register-only FMA / BF16-dot loops timed on all threads
// (AVX-512, or AVX2 + FMA on machines without it).
// 16 independent zmm accumulators per thread: with a 4-cycle FMA latency and
// two FMA ports, 8 chains are the minimum to keep both ports busy; 16 leaves
// margin (and covers the slightly longer vdpbf16ps latency) while staying in
// the 32 zmm registers together with the two operands.
#include "core/machine_peak.h"

#include <immintrin.h>
#include <omp.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cstdint>
#include <limits>

#include "core/timer.h"

namespace mt {
namespace {

// Iterations per timed trial: at ~3.3 GHz a trial lasts about 0.7 ms (fp32:
// 16 FMAs on two ports; AMX: 4 tile ops of 16 cycles) or 2.5 ms (vdpbf16ps,
// one per 2 cycles on Sapphire Rapids), long enough that barrier and timer
// overhead (microseconds) stay below 1%.
constexpr int64_t kZmmItersPerTrial = int64_t(1) << 18;
constexpr int64_t kAmxItersPerTrial = int64_t(1) << 15;
constexpr int kMinTrials = 5;
constexpr int kAccumulators = 16;

// Defeat constant folding: the loop operands come from memory the compiler
// must assume can change, and the result is stored to a volatile sink.
volatile float g_seed = 1.0f;
volatile float g_sink = 0.0f;

#define MT_REPEAT12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define MT_REPEAT16(X) MT_REPEAT12(X) X(12) X(13) X(14) X(15)

#if defined(__AVX512F__)
// Not _mm512_reduce_add_ps: GCC 12's header trips -Wuninitialized on it.
float horizontal_sum(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  float s = 0.0f;
  for (float x : lanes) s += x;
  return s;
}

// 16 fmadd per iteration; each is 16 lanes x (mul + add) = 32 flops.
float fp32_loop(int64_t iters) {
  const float seed = g_seed;
  const __m512 a = _mm512_set1_ps(0.9999f * seed);  // acc -> acc*a + b converges to 1,
  const __m512 b = _mm512_set1_ps(1e-4f * seed);    // so values stay normal
#define MT_DECL(i) __m512 acc##i = _mm512_set1_ps(seed + float(i));
  MT_REPEAT16(MT_DECL)
#undef MT_DECL
  for (int64_t it = 0; it < iters; ++it) {
#define MT_STEP(i) acc##i = _mm512_fmadd_ps(acc##i, a, b);
    MT_REPEAT16(MT_STEP)
#undef MT_STEP
  }
  __m512 sum = _mm512_setzero_ps();
#define MT_SUM(i) sum = _mm512_add_ps(sum, acc##i);
  MT_REPEAT16(MT_SUM)
#undef MT_SUM
  return horizontal_sum(sum);
}
constexpr double kFp32FlopsPerIter = kAccumulators * 16 * 2;
#else
// AVX2 + FMA (no AVX-512 on this build): 16 ymm registers hold 12
// accumulators and the two operands; 12 chains still cover a 4-cycle FMA
// latency on two ports.
float horizontal_sum(__m256 v) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  float s = 0.0f;
  for (float x : lanes) s += x;
  return s;
}

float fp32_loop(int64_t iters) {
  const float seed = g_seed;
  const __m256 a = _mm256_set1_ps(0.9999f * seed);
  const __m256 b = _mm256_set1_ps(1e-4f * seed);
#define MT_DECL(i) __m256 acc##i = _mm256_set1_ps(seed + float(i));
  MT_REPEAT12(MT_DECL)
#undef MT_DECL
  for (int64_t it = 0; it < iters; ++it) {
#define MT_STEP(i) acc##i = _mm256_fmadd_ps(acc##i, a, b);
    MT_REPEAT12(MT_STEP)
#undef MT_STEP
  }
  __m256 sum = _mm256_setzero_ps();
#define MT_SUM(i) sum = _mm256_add_ps(sum, acc##i);
  MT_REPEAT12(MT_SUM)
#undef MT_SUM
  return horizontal_sum(sum);
}
constexpr double kFp32FlopsPerIter = 12 * 8 * 2;
#endif

#if defined(__AVX512BF16__)
// 16 vdpbf16ps per iteration; each is 32 bf16 products summed pairwise into
// 16 fp32 lanes = 64 flops.
float bf16_loop(int64_t iters) {
  const float seed = g_seed;
  const __m512 x = _mm512_set1_ps(1e-3f * seed);  // adds 2e-6 per step: stays small
  const __m512bh a = _mm512_cvtne2ps_pbh(x, x);
  const __m512bh b = _mm512_cvtne2ps_pbh(x, x);
#define MT_DECL(i) __m512 acc##i = _mm512_set1_ps(seed + float(i));
  MT_REPEAT16(MT_DECL)
#undef MT_DECL
  for (int64_t it = 0; it < iters; ++it) {
#define MT_STEP(i) acc##i = _mm512_dpbf16_ps(acc##i, a, b);
    MT_REPEAT16(MT_STEP)
#undef MT_STEP
  }
  __m512 sum = _mm512_setzero_ps();
#define MT_SUM(i) sum = _mm512_add_ps(sum, acc##i);
  MT_REPEAT16(MT_SUM)
#undef MT_SUM
  return horizontal_sum(sum);
}
constexpr double kBf16FlopsPerIter = kAccumulators * 64;
#endif

#undef MT_REPEAT16
#undef MT_REPEAT12

#if defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__linux__)
#define MT_HAVE_AMX 1
// Linux hands out the 8 KiB AMX tile state only on request (arch_prctl,
// kernel >= 5.16); the permission covers every thread of the process.
bool request_amx_permission() {
  constexpr int kArchReqXcompPerm = 0x1023;
  constexpr int kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

// Palette 1 tile configuration (Intel SDM, LDTILECFG): 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];  // bytes per row of tile i
  uint8_t rows[16];
};

// Tiles 0-3 accumulate (16 x 16 fp32), 4-5 hold A (16 rows x 32 bf16), 6-7
// hold B (16 x 16 bf16 pairs): a 2 x 2 block, the layout a GEMM micro-kernel
// uses. Each tdpbf16ps is 16 * 16 * 32 multiply-adds = 16384 flops; four
// independent chains cover its latency. The tile config is per thread.
float amx_loop(int64_t iters) {
  TileConfig cfg{};
  cfg.palette = 1;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  _tile_loadconfig(&cfg);
  alignas(64) uint16_t operand[16 * 32];
  alignas(64) float acc[16 * 16];
  const float seed = g_seed;
  for (float& x : acc) x = seed;
  const uint16_t small = 0x3a83;  // bf16 ~1e-3: each step adds ~3e-5 per element
  for (uint16_t& x : operand) x = small;
  _tile_loadd(0, acc, 64);
  _tile_loadd(1, acc, 64);
  _tile_loadd(2, acc, 64);
  _tile_loadd(3, acc, 64);
  _tile_loadd(4, operand, 64);
  _tile_loadd(5, operand, 64);
  _tile_loadd(6, operand, 64);
  _tile_loadd(7, operand, 64);
  for (int64_t it = 0; it < iters; ++it) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  float total = 0.0f;
  _tile_stored(0, acc, 64);
  total += acc[0];
  _tile_stored(3, acc, 64);
  total += acc[255];
  _tile_release();
  return total;
}
constexpr double kAmxFlopsPerIter = 4 * 16 * 16 * 32 * 2;
#endif

// Repeats barrier-to-barrier trials of `loop` on all threads until `seconds`
// have passed (at least kMinTrials) and returns the best rate in GFLOP/s.
// The first trials double as warm-up for the AVX-512 frequency transition.
template <typename Loop>
double best_gflops(Loop loop, int64_t iters, double flops_per_iter, double seconds, int threads,
                   int* used) {
  double best_time = std::numeric_limits<double>::infinity();
  double start = now_seconds(), t0 = 0.0;
  bool stop = false;
  float total = 0.0f;
  int team = 1;
#pragma omp parallel num_threads(threads) reduction(+ : total)
  {
#pragma omp master
    team = omp_get_num_threads();
    for (int trial = 0;; ++trial) {
#pragma omp barrier
#pragma omp master
      t0 = now_seconds();
      total += loop(iters);
#pragma omp barrier
#pragma omp master
      {
        double t1 = now_seconds();
        best_time = std::min(best_time, t1 - t0);
        stop = trial + 1 >= kMinTrials && t1 - start >= seconds;
      }
#pragma omp barrier
      if (stop) break;
    }
  }
  g_sink = total;
  *used = team;
  return double(team) * double(iters) * flops_per_iter / best_time * 1e-9;
}

}  // namespace

PeakResult measure_peak(double seconds_per_dtype, int threads) {
  if (threads <= 0) threads = omp_get_max_threads();
  PeakResult r{0.0, 0.0, 0, 0.0};
  r.fp32_gflops = best_gflops(fp32_loop, kZmmItersPerTrial, kFp32FlopsPerIter, seconds_per_dtype,
                              threads, &r.threads);
  [[maybe_unused]] int used = 0;
#if defined(__AVX512BF16__)
  r.bf16_gflops = best_gflops(bf16_loop, kZmmItersPerTrial, kBf16FlopsPerIter, seconds_per_dtype,
                              threads, &used);
#endif
#if defined(MT_HAVE_AMX)
  if (request_amx_permission())
    r.amx_bf16_gflops = best_gflops(amx_loop, kAmxItersPerTrial, kAmxFlopsPerIter,
                                    seconds_per_dtype, threads, &used);
#endif
  return r;
}

Bf16Peak bf16_matmul_peak(const PeakResult& p) {
  if (p.amx_bf16_gflops > 0) return {p.amx_bf16_gflops, "amx_bf16"};
  if (p.bf16_gflops > 0) return {p.bf16_gflops, "avx512_bf16"};
  return {p.fp32_gflops, "fp32_fma"};
}

}  // namespace mt
