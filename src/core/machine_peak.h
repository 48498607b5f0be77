// machine_peak.h — measures this machine's peak FLOP rates (fp32 FMA,
// AVX512-BF16 dot products, AMX bf16 tiles) on all OpenMP threads: the
// denominators for MFU figures from `moetrain bench` and the GEMM benchmarks.
#pragma once

namespace mt {

struct PeakResult {
  double fp32_gflops;      // vector FMA (AVX-512, else AVX2), all threads together (GFLOP/s)
  double bf16_gflops;      // _mm512_dpbf16_ps, all threads; 0 without AVX512_BF16
  int threads;             // threads that ran the loops
  double amx_bf16_gflops;  // AMX tdpbf16ps, all threads; 0 without AMX or when
                           // the kernel refuses the tile state. oneDNN's bf16
                           // matmul runs on AMX, so this is the ceiling for bf16
                           // GEMMs; bf16_gflops is the ceiling for zmm code.
};

// Runs register-only multiply-add loops (no memory traffic) on `threads`
// threads (0 = the OpenMP default) for about `seconds_per_dtype` seconds per
// instruction kind, as many short timed trials, and reports the best trial:
// on a shared, noisy VM the fastest trial is the closest to the hardware
// limit. Counts 2 flops per multiply-add.
PeakResult measure_peak(double seconds_per_dtype = 0.3, int threads = 0);

// The unit a bf16 matmul runs on, for a bf16 step's MFU: AMX tiles where the
// CPU has them, else AVX512-BF16 dot products (AMD Zen 4 has these and no
// AMX), else the fp32 FMA units (bf16 emulated through fp32).
struct Bf16Peak {
  double gflops;
  const char* kind;  // "amx_bf16", "avx512_bf16" or "fp32_fma"
};
Bf16Peak bf16_matmul_peak(const PeakResult& p);

}  // namespace mt
