// attention_kernel.cpp — dispatch by precision and train.attention_kernel
// (see the header).
#include "model/attention_kernel.h"

#include "core/check.h"
#include "core/phase_timer.h"
#include "kernels/cpu/simd.h"

namespace mt {

AttentionKernel resolve_attention_kernel(AttentionKernel requested, MatmulPrecision p) {
  if (p == MatmulPrecision::kBf16) return AttentionKernel::kMatmul;
  if (requested != AttentionKernel::kAuto) return requested;
  return simd::kLanes >= 16 ? AttentionKernel::kBlocked : AttentionKernel::kMatmul;
}

const char* attention_kernel_name(AttentionKernel requested, MatmulPrecision p) {
  if (resolve_attention_kernel(requested, p) == AttentionKernel::kBlocked) return "blocked-fp32";
  return p == MatmulPrecision::kBf16 ? "matmul-bf16" : "matmul-fp32";
}

void run_attention_forward(void* o, OperandForm of, float* lse, const QkvOperands& in, const AttentionDims& d,
                           MatmulPrecision p, AttentionKernel k) {
  ScopedPhase phase(Phase::kAttention);
  if (resolve_attention_kernel(k, p) == AttentionKernel::kMatmul)
    return attention_matmul_forward(o, of, lse, in, d, p);
  MT_CHECK(of == OperandForm::kFp32 && in.form == OperandForm::kFp32, "the fp32 attention kernel works in fp32");
  attention_forward(static_cast<float*>(o), lse, static_cast<const float*>(in.q), static_cast<const float*>(in.k),
                    static_cast<const float*>(in.v), d);
}

void run_attention_backward(float* dq, float* dk, float* dv, const float* dout, const QkvOperands& in,
                            const void* o, OperandForm of, const float* lse, const AttentionDims& d,
                            MatmulPrecision p, AttentionKernel k) {
  ScopedPhase phase(Phase::kAttention);
  if (resolve_attention_kernel(k, p) == AttentionKernel::kMatmul)
    return attention_matmul_backward(dq, dk, dv, dout, in, o, of, lse, d, p);
  MT_CHECK(of == OperandForm::kFp32 && in.form == OperandForm::kFp32, "the fp32 attention kernel works in fp32");
  attention_backward(dq, dk, dv, dout, static_cast<const float*>(in.q), static_cast<const float*>(in.k),
                     static_cast<const float*>(in.v), static_cast<const float*>(o), lse, d);
}

}  // namespace mt
