// swiglu_ffn.h — one SwiGLU MLP (dense FFN, a shared expert, or one routed
// expert over its rows): y = (silu(x W1^T) * (x W3^T)) W2^T.
// x (M, Din); w13 (2F, Din) = W1 then W3; w2 (Din, F); h13 (M, 2F), z (M, F) saved.
#pragma once
#include <cstdint>

#include "kernels/cpu/gemm.h"
#include "model/buffer_sizer.h"

namespace mt {

struct SwigluFfnDims {
  int64_t M, F, Din;
};

// The forward's two halves, for callers that run other work between them
// (the MoE block, while its routed rows are in flight):
//   up:   h13 = x W13^T, z = silu(h1) * h3 (z written in the form W2's GEMM reads)
//   down: y = beta * y + z W2^T
void swiglu_ffn_up(float* h13, void* z, OperandForm zf, const float* x, const float* w13, const SwigluFfnDims& d,
                   MatmulPrecision p);
void swiglu_ffn_down(float* y, const void* z, OperandForm zf, const float* w2, const SwigluFfnDims& d, float beta,
                     MatmulPrecision p);
// y = base + z W2^T, the residual added by the product (gemm_add): the bits
// of base copied into y and the beta-1 form above. y may be base.
void swiglu_ffn_down_onto(float* y, const void* z, OperandForm zf, const float* w2, const SwigluFfnDims& d,
                          const float* base, MatmulPrecision p);

// y (M, Din) = beta * y + ffn(x): up then down. z is written in the form
// W2's GEMM reads at p (a plain fp32 buffer is the fp32 form).
void swiglu_ffn_forward(float* y, float* h13, void* z, OperandForm zf, const float* x, const float* w13,
                        const float* w2, const SwigluFfnDims& d, float beta, MatmulPrecision p);
inline void swiglu_ffn_forward(float* y, float* h13, float* z, const float* x, const float* w13, const float* w2,
                               const SwigluFfnDims& d, float beta, MatmulPrecision p) {
  swiglu_ffn_forward(y, h13, z, OperandForm::kFp32, x, w13, w2, d, beta, p);
}
inline void swiglu_ffn_forward(float* y, float* h13, GemmActivation& z, const float* x, const float* w13,
                               const float* w2, const SwigluFfnDims& d, float beta, MatmulPrecision p) {
  swiglu_ffn_forward(y, h13, z.out(), z.form, x, w13, w2, d, beta, p);
}

// dx (M, Din) = beta * dx + d/dx; dw13, dw2 added into or written (their own
// betas, gemm.h's WeightGrad). Scratch dz (M, F),
// dh13 (M, 2F floats; written in the form the W13 products read, since
// nothing else reads it).
void swiglu_ffn_backward(float* dx, WeightGrad dw13, WeightGrad dw2, float* dz, float* dh13, const float* dy,
                         const float* x, const float* h13, GemmInput z, const float* w13, const float* w2,
                         const SwigluFfnDims& d, float beta, MatmulPrecision p);

}  // namespace mt
