// rmsnorm.cpp — row-parallel forward/backward; weight grads reduced per column
// block over all rows in row order (deterministic for any thread count).
#include "kernels/cpu/rmsnorm.h"

#include <algorithm>
#include <cmath>

namespace mt {

void rmsnorm_forward(float* y, float* rstd, const float* x, const float* w, int64_t N, int64_t C,
                     float eps) {
  rmsnorm_forward(y, OperandForm::kFp32, rstd, x, w, N, C, eps);
}

void rmsnorm_forward(void* y, OperandForm yf, float* rstd, const float* x, const float* w, int64_t N, int64_t C,
                     float eps) {
  // bf16 rows are computed in fp32 a chunk at a time, on the stack, then rounded.
  constexpr int64_t kChunk = 512;
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const float* xr = x + n * C;
    float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
    for (int64_t c = 0; c < C; ++c) ss += xr[c] * xr[c];
    float r = 1.0f / std::sqrt(ss / float(C) + eps);
    rstd[n] = r;
    if (yf != OperandForm::kBf16) {
      float* yr = static_cast<float*>(y) + n * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) yr[c] = xr[c] * r * w[c];
      if (yf == OperandForm::kBf16InFp32) write_operand(yr, 0, yr, C, yf);
      continue;
    }
    float tmp[kChunk];
    for (int64_t c0 = 0; c0 < C; c0 += kChunk) {
      const int64_t len = std::min(kChunk, C - c0);
#pragma omp simd
      for (int64_t c = 0; c < len; ++c) tmp[c] = xr[c0 + c] * r * w[c0 + c];
      write_operand(y, n * C + c0, tmp, len, yf);
    }
  }
}

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
    constexpr int64_t kBlock = 16;
    const int64_t blocks = (C + kBlock - 1) / kBlock;
#pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t c0 = b * kBlock, c1 = c0 + kBlock < C ? c0 + kBlock : C;
      float acc[kBlock] = {};
      for (int64_t n = 0; n < N; ++n) {
        const float r = rstd[n];
        for (int64_t c = c0; c < c1; ++c) acc[c - c0] += dy[n * C + c] * x[n * C + c] * r;
      }
      for (int64_t c = c0; c < c1; ++c) dw[c] += acc[c - c0];
    }
  }
}

}  // namespace mt
