// attention_matmul.h — the attention of attention.h (same shapes, window,
// lse, token-major output) with its five products run as oneDNN matrix
// multiplies: bf16 operands on AMX in the bf16 step. A tile stacks the query
// heads that share a kv head, so one product serves the whole group.
//   forward:  S = Q K^T, P = softmax(S), O = P V          (lse saved)
//   backward: P from lse, dP = dO V^T, dS = P (dP - rowsum(dO o O)),
//             dQ = dS K, dK += dS^T Q, dV += P^T dO
// With MatmulPrecision::kBf16, Q, K, V, dO, P and dS are rounded to bf16 as
// operands; scores, softmax, lse, the row sums and every output and
// accumulation stay fp32. With kFp32 it is the same arithmetic as
// attention.h up to summation order.
// Each task runs serially through gemm_on_thread and owns its outputs
// (forward: one query tile of one kv group; backward: one kv head), so
// results are bitwise identical for any thread count.
#pragma once
#include "kernels/cpu/attention.h"
#include "kernels/cpu/gemm.h"

namespace mt {

// Q, K, V as the kernel reads them: fp32 (converted per tile where the
// product reads bf16), or already in the product's operand form, written so
// by their producer (split_qkv_rope) and read in place. Same layouts either way.
struct QkvOperands {
  const void *q = nullptr, *k = nullptr, *v = nullptr;
  OperandForm form = OperandForm::kFp32;
};

void attention_matmul_forward(float* o, float* lse, const float* q, const float* k, const float* v,
                              const AttentionDims& d, MatmulPrecision p);
// The same, o written in form of (operand.h): in a bf16 step, the form the
// output projection's GEMMs read, so the output is rounded once, here.
void attention_matmul_forward(void* o, OperandForm of, float* lse, const QkvOperands& qkv, const AttentionDims& d,
                              MatmulPrecision p);

void attention_matmul_backward(float* dq, float* dk, float* dv, const float* dout, const float* q,
                               const float* k, const float* v, const float* o, const float* lse,
                               const AttentionDims& d, MatmulPrecision p);
// The same, reading o in form of: rowsum(dO o O) then takes the stored
// (rounded) output, as FlashAttention-2 takes its bf16 O.
void attention_matmul_backward(float* dq, float* dk, float* dv, const float* dout, const QkvOperands& qkv,
                               const void* o, OperandForm of, const float* lse, const AttentionDims& d,
                               MatmulPrecision p);

// Queries per tile for a group of `group` query heads per kv head.
int64_t attention_matmul_query_tile(int64_t group);

}  // namespace mt
