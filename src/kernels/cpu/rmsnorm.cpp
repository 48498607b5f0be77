// rmsnorm.cpp — row-parallel forward/backward; weight grads reduced per column
// block over all rows in row order (deterministic for any thread count).
#include "kernels/cpu/rmsnorm.h"

#include <algorithm>
#include <cmath>

#include <omp.h>

#include "kernels/cpu/simd.h"

namespace mt {

void rmsnorm_forward(float* y, float* rstd, const float* x, const float* w, int64_t N, int64_t C,
                     float eps) {
  rmsnorm_forward(y, OperandForm::kFp32, rstd, x, w, N, C, eps);
}

void rmsnorm_forward(void* y, OperandForm yf, float* rstd, const float* x, const float* w, int64_t N, int64_t C,
                     float eps) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const float* xr = x + n * C;
    float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
    for (int64_t c = 0; c < C; ++c) ss += xr[c] * xr[c];
    float r = 1.0f / std::sqrt(ss / float(C) + eps);
    rstd[n] = r;
    write_operand_row(y, n * C, C, yf, [&](float* out, int64_t c0, int64_t len) {
#pragma omp simd
      for (int64_t c = 0; c < len; ++c) out[c] = xr[c0 + c] * r * w[c0 + c];
    });
  }
}

namespace {
// dw[c] += sum over rows n, in order, of dy[n, c] x[n, c] rstd[n], by blocks
// of W columns shared out over the enclosing parallel region's threads
// (narrow rows: a head's q/k norm).
template <int64_t W>
void weight_gradient_blocks(float* dw, const float* dy, const float* x, const float* rstd, int64_t N, int64_t C) {
  const int64_t blocks = (C + W - 1) / W;
#pragma omp for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t c0 = b * W, len = std::min(W, C - c0);
    alignas(64) float acc[W] = {};
    for (int64_t n = 0; n < N; ++n) {
      const float r = rstd[n];
      const float *d = dy + n * C + c0, *xr = x + n * C + c0;
      if (len == W) {
#pragma omp simd
        for (int64_t c = 0; c < W; ++c) acc[c] += d[c] * xr[c] * r;
      } else {
        for (int64_t c = 0; c < len; ++c) acc[c] += d[c] * xr[c] * r;
      }
    }
    for (int64_t c = 0; c < len; ++c) dw[c0 + c] += acc[c];
  }
}

// The same sums for wide rows: each thread takes a run of blocks of W
// columns and sweeps the rows once for all of them, its run of each row at
// a time. Block by block, every sweep read a quarter of each 2 KB row, a new
// page every other row, which the prefetchers do not follow (moe-512's norm
// with its operands in memory: 1.055 -> 0.944 ms, in cache 0.432 -> 0.348
// ms, AMD Zen 5); rows a few ahead are asked into L2 for the same reason.
template <int64_t W>
void weight_gradient_runs(float* dw, const float* dy, const float* x, const float* rstd, int64_t N, int64_t C) {
  const int64_t blocks = (C + W - 1) / W;
  const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
  const int64_t c0 = blocks * t / threads * W, c1 = std::min(C, blocks * (t + 1) / threads * W);
  constexpr int64_t kMostColumns = 1024, kRowsAhead = 8;
  alignas(64) float acc[kMostColumns];
  for (int64_t a0 = c0; a0 < c1; a0 += kMostColumns) {  // wider than kMostColumns: in runs
    const int64_t len = std::min(kMostColumns, c1 - a0);
    std::fill(acc, acc + len, 0.0f);
    for (int64_t n = 0; n < N; ++n) {
      if (n + kRowsAhead < N) {
        simd::prefetch_l2(dy + (n + kRowsAhead) * C + a0, len);
        simd::prefetch_l2(x + (n + kRowsAhead) * C + a0, len);
      }
      const float r = rstd[n];
      const float *d = dy + n * C + a0, *xr = x + n * C + a0;
#pragma omp simd
      for (int64_t c = 0; c < len; ++c) acc[c] += d[c] * xr[c] * r;
    }
    for (int64_t c = 0; c < len; ++c) dw[a0 + c] += acc[c];
  }
}
}  // namespace

void rmsnorm_backward(float* dx, float* dw, const float* dy, const float* x, const float* w,
                      const float* rstd, int64_t N, int64_t C, float beta) {
#pragma omp parallel
  {
#pragma omp for schedule(static) nowait
    for (int64_t n = 0; n < N; ++n) {
      const float* xr = x + n * C;
      const float* dyr = dy + n * C;
      float* dxr = dx + n * C;
      float r = rstd[n];
      // dot = sum_c dy*w*xhat; dx = r * (dy*w - xhat * dot / C)
      float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
      for (int64_t c = 0; c < C; ++c) dot += dyr[c] * w[c] * xr[c] * r;
      float k = dot / float(C);
      if (beta == 0.0f) {
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) dxr[c] = r * (dyr[c] * w[c] - xr[c] * r * k);
      } else {
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) dxr[c] += r * (dyr[c] * w[c] - xr[c] * r * k);
      }
    }
    // Runs of blocks of 64 columns when there are two blocks per thread at
    // least, else blocks of 16 so that narrow rows (a head's q/k norm) still
    // share out (runs were 1.15x slower there). Each column sums its rows in
    // order however the columns are shared, so the bits do not depend on it.
    if (C >= 2 * 64 * omp_get_num_threads())
      weight_gradient_runs<64>(dw, dy, x, rstd, N, C);
    else
      weight_gradient_blocks<16>(dw, dy, x, rstd, N, C);
  }
}

}  // namespace mt
