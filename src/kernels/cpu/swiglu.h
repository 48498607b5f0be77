// swiglu.h — SwiGLU activation on a fused gate|up projection.
// h (M, 2F): columns [0, F) gate u, [F, 2F) up g; z (M, F) = silu(u) * g.
#pragma once
#include <cstdint>

#include "kernels/cpu/operand.h"

namespace mt {
void swiglu_forward(float* z, const float* h, int64_t M, int64_t F);
// The same values, written in form zf (operand.h): for a z whose only
// readers are the down projection's GEMMs, rounded once here.
void swiglu_forward(void* z, OperandForm zf, const float* h, int64_t M, int64_t F);
// dh (M, 2F) written.
void swiglu_backward(float* dh, const float* dz, const float* h, int64_t M, int64_t F);
// The same values written in form f, for a dh only the up projection's GEMMs read.
void swiglu_backward(void* dh, OperandForm f, const float* dz, const float* h, int64_t M, int64_t F);

// The forward and the backward on the calling thread only, for kernels that
// run them inside their own parallel tasks (grouped_swiglu.h): the same bits
// as above, without opening a nested one-thread OpenMP region per call;
// written in form f (operand.h), as the grouped experts' products read z and
// dh (kFp32: the fp32 values).
void swiglu_forward_on_thread(void* z, OperandForm f, const float* h, int64_t M, int64_t F);
void swiglu_backward_on_thread(void* dh, OperandForm f, const float* dz, const float* h, int64_t M, int64_t F);

// The row kernels all of the above are made of, for n values with u and g in rows of their own
// (serial, vectorised): z = silu(u) * g, and du, dg from dz. The gated-delta layer's output gate,
// silu(z) * x, is this product with u = z and g = x (delta_gates.h).
void swiglu_span(float* z, const float* u, const float* g, int64_t n);
void swiglu_backward_span(float* du, float* dg, const float* dz, const float* u, const float* g, int64_t n);
}  // namespace mt
