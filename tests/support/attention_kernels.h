// attention_kernels.h — the attention kernels a test runs side by side: the
// blocked fp32 kernel (attention.h) and the matmul-tiled one in fp32 and
// with bf16 operands (attention_matmul.h), under one signature.
#pragma once
#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_matmul.h"

namespace mt::testing {

enum class AttentionKernelKind { kBlocked, kMatmulFp32, kMatmulBf16 };

inline MatmulPrecision precision_of(AttentionKernelKind k) {
  return k == AttentionKernelKind::kMatmulBf16 ? MatmulPrecision::kBf16 : MatmulPrecision::kFp32;
}

inline void run_forward(AttentionKernelKind k, float* o, float* lse, const float* q, const float* kk, const float* v,
                        const AttentionDims& d) {
  if (k == AttentionKernelKind::kBlocked) return attention_forward(o, lse, q, kk, v, d);
  attention_matmul_forward(o, lse, q, kk, v, d, precision_of(k));
}

inline void run_backward(AttentionKernelKind k, float* dq, float* dk, float* dv, const float* dout, const float* q,
                         const float* kk, const float* v, const float* o, const float* lse, const AttentionDims& d) {
  if (k == AttentionKernelKind::kBlocked) return attention_backward(dq, dk, dv, dout, q, kk, v, o, lse, d);
  attention_matmul_backward(dq, dk, dv, dout, q, kk, v, o, lse, d, precision_of(k));
}

}  // namespace mt::testing
