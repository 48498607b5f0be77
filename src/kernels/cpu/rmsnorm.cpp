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
