// attention_kernel.h — the attention kernel a block runs, by the step's
// matmul precision and train.attention_kernel: bf16 steps run the
// matmul-tiled kernel with bf16 operands (its products on AMX,
// attention_matmul.h); fp32 steps run the blocked fp32 kernel (attention.h)
// or the matmul-tiled kernel in fp32. Both under the attention phase of the
// bench breakdown.
#pragma once
#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_matmul.h"
#include "kernels/cpu/gemm.h"

namespace mt {

// train.attention_kernel. kAuto picks the fp32 kernel by the build's vector
// ISA: on AVX2 (8 lanes) the matmul-tiled one, measured 1.3-1.8x faster per
// pass on the moe-512 shapes (AMD Zen 3, 2026-12-01, docs/performance.md);
// on AVX-512 the blocked one, as before, whose register blocks have twice
// the lanes there, until a run on such a CPU compares the two.
// bf16 steps always run the matmul-tiled kernel: the blocked one has no bf16
// form (a config asking for it is refused, run_config.cpp).
enum class AttentionKernel { kAuto, kBlocked, kMatmul };

// What `requested` means at precision p: kBlocked or kMatmul, never kAuto.
AttentionKernel resolve_attention_kernel(AttentionKernel requested, MatmulPrecision p);

// "blocked-fp32", "matmul-fp32" or "matmul-bf16": what the bench reports and records.
const char* attention_kernel_name(AttentionKernel requested, MatmulPrecision p);

// o is written (and read back by the backward) in form of, the form Wo's
// GEMMs read at p: bf16 steps store it rounded (docs/kernels.md). q, k, v
// may be held in the bf16 step's operand form; fp32 steps read fp32.
void run_attention_forward(void* o, OperandForm of, float* lse, const QkvOperands& qkv, const AttentionDims& d,
                           MatmulPrecision p, AttentionKernel k);

void run_attention_backward(float* dq, float* dk, float* dv, const float* dout, const QkvOperands& qkv,
                            const void* o, OperandForm of, const float* lse, const AttentionDims& d,
                            MatmulPrecision p, AttentionKernel k);

}  // namespace mt
