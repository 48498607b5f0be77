// swiglu_ffn.cpp — two GEMMs around the SwiGLU kernel; backward mirrors them.
#include "model/swiglu_ffn.h"

#include "kernels/cpu/swiglu.h"

namespace mt {

void swiglu_ffn_up(float* h13, void* z, OperandForm zf, const float* x, const float* w13, const SwigluFfnDims& d,
                   MatmulPrecision p) {
  if (d.M == 0) return;
  linear_forward(h13, x, w13, d.M, 2 * d.F, d.Din, p);
  swiglu_forward(z, zf, h13, d.M, d.F);
}

void swiglu_ffn_down(float* y, const void* z, OperandForm zf, const float* w2, const SwigluFfnDims& d, float beta,
                     MatmulPrecision p) {
  if (d.M == 0) return;
  gemm(y, GemmInput(z, zf), w2, GemmShape{d.M, d.Din, d.F, Trans::kNo, Trans::kYes}, beta, p);
}

void swiglu_ffn_down_onto(float* y, const void* z, OperandForm zf, const float* w2, const SwigluFfnDims& d,
                          const float* base, MatmulPrecision p) {
  if (d.M == 0) return;
  gemm_add(y, GemmInput(z, zf), w2, GemmShape{d.M, d.Din, d.F, Trans::kNo, Trans::kYes}, base, p);
}

void swiglu_ffn_forward(float* y, float* h13, void* z, OperandForm zf, const float* x, const float* w13,
                        const float* w2, const SwigluFfnDims& d, float beta, MatmulPrecision p) {
  swiglu_ffn_up(h13, z, zf, x, w13, d, p);
  swiglu_ffn_down(y, z, zf, w2, d, beta, p);
}

void swiglu_ffn_backward(float* dx, WeightGrad dw13, WeightGrad dw2, float* dz, float* dh13, const float* dy,
                         const float* x, const float* h13, GemmInput z, const float* w13, const float* w2,
                         const SwigluFfnDims& d, float beta, MatmulPrecision p) {
  if (d.M == 0) return;
  linear_backward(dz, dw2, dy, z, w2, d.M, d.Din, d.F, 0.0f, p);
  const OperandForm f = operand_form(p);
  swiglu_backward(dh13, f, dz, h13, d.M, d.F);
  linear_backward(dx, dw13, GemmInput(dh13, f), x, w13, d.M, 2 * d.F, d.Din, beta, p);
}

}  // namespace mt
