// attention_kernel.cpp — dispatch by precision (see the header).
#include "model/attention_kernel.h"

#include "core/phase_timer.h"
#include "kernels/cpu/attention_matmul.h"

namespace mt {

const char* attention_kernel_name(MatmulPrecision p) {
  return p == MatmulPrecision::kBf16 ? "matmul-bf16" : "blocked-fp32";
}

void run_attention_forward(float* o, float* lse, const float* q, const float* k, const float* v,
                           const AttentionDims& d, MatmulPrecision p) {
  ScopedPhase phase(Phase::kAttention);
  if (p == MatmulPrecision::kBf16)
    attention_matmul_forward(o, lse, q, k, v, d, p);
  else
    attention_forward(o, lse, q, k, v, d);
}

void run_attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                            const float* v, const float* o, const float* lse, const AttentionDims& d,
                            MatmulPrecision p) {
  ScopedPhase phase(Phase::kAttention);
  if (p == MatmulPrecision::kBf16)
    attention_matmul_backward(dq, dk, dv, dout, q, k, v, o, lse, d, p);
  else
    attention_backward(dq, dk, dv, dout, q, k, v, o, lse, d);
}

}  // namespace mt
