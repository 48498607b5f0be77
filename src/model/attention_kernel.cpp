// attention_kernel.cpp — dispatch by precision (see the header).
#include "model/attention_kernel.h"

#include "core/check.h"
#include "core/phase_timer.h"

namespace mt {

const char* attention_kernel_name(MatmulPrecision p) {
  return p == MatmulPrecision::kBf16 ? "matmul-bf16" : "blocked-fp32";
}

void run_attention_forward(void* o, OperandForm of, float* lse, const QkvOperands& in, const AttentionDims& d,
                           MatmulPrecision p) {
  ScopedPhase phase(Phase::kAttention);
  if (p == MatmulPrecision::kBf16) return attention_matmul_forward(o, of, lse, in, d, p);
  MT_CHECK(of == OperandForm::kFp32 && in.form == OperandForm::kFp32, "the fp32 attention kernel works in fp32");
  attention_forward(static_cast<float*>(o), lse, static_cast<const float*>(in.q), static_cast<const float*>(in.k),
                    static_cast<const float*>(in.v), d);
}

void run_attention_backward(float* dq, float* dk, float* dv, const float* dout, const QkvOperands& in,
                            const void* o, OperandForm of, const float* lse, const AttentionDims& d,
                            MatmulPrecision p) {
  ScopedPhase phase(Phase::kAttention);
  if (p == MatmulPrecision::kBf16) return attention_matmul_backward(dq, dk, dv, dout, in, o, of, lse, d, p);
  MT_CHECK(of == OperandForm::kFp32 && in.form == OperandForm::kFp32, "the fp32 attention kernel works in fp32");
  attention_backward(dq, dk, dv, dout, static_cast<const float*>(in.q), static_cast<const float*>(in.k),
                     static_cast<const float*>(in.v), static_cast<const float*>(o), lse, d);
}

}  // namespace mt
