// attention_kernel.h — the attention kernel a block runs, by the step's
// matmul precision: bf16 steps run the matmul-tiled kernel with bf16 operands
// (its products on AMX, attention_matmul.h); fp32 steps run the blocked fp32
// kernel (attention.h). Both under the attention phase of the bench breakdown.
#pragma once
#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_matmul.h"
#include "kernels/cpu/gemm.h"

namespace mt {

// "blocked-fp32" or "matmul-bf16": what the bench reports and records.
const char* attention_kernel_name(MatmulPrecision p);

// o is written (and read back by the backward) in form of, the form Wo's
// GEMMs read at p: bf16 steps store it rounded (docs/kernels.md). q, k, v
// may be held in the bf16 step's operand form; the fp32 kernel reads fp32.
void run_attention_forward(void* o, OperandForm of, float* lse, const QkvOperands& qkv, const AttentionDims& d,
                           MatmulPrecision p);

void run_attention_backward(float* dq, float* dk, float* dv, const float* dout, const QkvOperands& qkv,
                            const void* o, OperandForm of, const float* lse, const AttentionDims& d,
                            MatmulPrecision p);

}  // namespace mt
