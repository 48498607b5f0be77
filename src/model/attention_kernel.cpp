// attention_kernel.cpp — dispatch by precision (see the header).
#include "model/attention_kernel.h"

#include "core/check.h"
#include "core/phase_timer.h"
#include "kernels/cpu/attention_matmul.h"

namespace mt {

const char* attention_kernel_name(MatmulPrecision p) {
  return p == MatmulPrecision::kBf16 ? "matmul-bf16" : "blocked-fp32";
}

void run_attention_forward(void* o, OperandForm of, float* lse, const float* q, const float* k, const float* v,
                           const AttentionDims& d, MatmulPrecision p) {
  ScopedPhase phase(Phase::kAttention);
  if (p == MatmulPrecision::kBf16)
    return attention_matmul_forward(o, of, lse, q, k, v, d, p);
  MT_CHECK(of == OperandForm::kFp32, "the fp32 attention kernel writes fp32");
  attention_forward(static_cast<float*>(o), lse, q, k, v, d);
}

void run_attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                            const float* v, const void* o, OperandForm of, const float* lse, const AttentionDims& d,
                            MatmulPrecision p) {
  ScopedPhase phase(Phase::kAttention);
  if (p == MatmulPrecision::kBf16)
    return attention_matmul_backward(dq, dk, dv, dout, q, k, v, o, of, lse, d, p);
  MT_CHECK(of == OperandForm::kFp32, "the fp32 attention kernel reads fp32");
  attention_backward(dq, dk, dv, dout, q, k, v, static_cast<const float*>(o), lse, d);
}

}  // namespace mt
