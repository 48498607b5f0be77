// rmsnorm.h — RMSNorm over the last dim: y = x * rstd * w, rstd = 1/sqrt(mean(x^2) + eps).
// Shapes: x, y (N, C); w (C); rstd (N) saved for backward.
#pragma once
#include <cstdint>

#include "kernels/cpu/operand.h"

namespace mt {

void rmsnorm_forward(float* y, float* rstd, const float* x, const float* w, int64_t N, int64_t C,
                     float eps);
// The same values, written in form yf (operand.h): for a y whose only
// readers are GEMMs of that form, rounded once here instead of in each GEMM.
void rmsnorm_forward(void* y, OperandForm yf, float* rstd, const float* x, const float* w, int64_t N, int64_t C,
                     float eps);

// dx (N, C): written when beta == 0, accumulated when beta == 1.
// dw (C): accumulated. Column-parallel, so dw is thread-count invariant.
void rmsnorm_backward(float* dx, float* dw, const float* dy, const float* x, const float* w,
                      const float* rstd, int64_t N, int64_t C, float beta);

}  // namespace mt
