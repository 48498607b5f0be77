// delta_gates.h — the elementwise pieces of a gated-delta layer (model/delta_block.h) around the
// gated_delta.h recurrence: per-head L2 normalisation of q and k, the decay and write-strength
// gates, the SiLU output gate, and gathering head-major tensors out of a token-major projection.
// Legend: N = B*T tokens, H heads, C row width, ld a row stride of the token-major projection.
#pragma once
#include <cstdint>

#include "kernels/cpu/operand.h"

namespace mt {

// The heads of the token-major (N, ld) block at src (columns [0, H Dh)), each row L2-normalised
// on the way to the head-major y (B, H, T, Dh): y = x / sqrt(sum x^2 + eps), rnorm (B, H, T)
// saved. One pass instead of a gather and a norm, and no copy of the raw heads kept. The
// backward writes dx into the same columns of dsrc.
void l2norm_heads_forward(float* y, float* rnorm, const float* src, int64_t ld, int64_t B, int64_t T, int64_t H,
                          int64_t Dh, float eps);
void l2norm_heads_backward(float* dsrc, int64_t ld, const float* dy, const float* y, const float* rnorm, int64_t B,
                           int64_t T, int64_t H, int64_t Dh);

// Gated DeltaNet gates (Yang, Kautz & Hatamizadeh 2025, following Mamba2's discretisation):
//   g = -exp(A_log[h]) * softplus(a + dt_bias[h]),   beta = sigmoid(b)
// a, b: column h of the token-major (N, ld) blocks starting at `a` and `b`; g, beta (B, H, T).
void delta_gates_forward(float* g, float* beta, const float* a, const float* b, int64_t ld, const float* A_log,
                         const float* dt_bias, int64_t B, int64_t T, int64_t H);
// da, db written into the same (N, ld) columns; dA_log, ddt_bias (H) accumulated, each head by
// one task in token order (thread-count invariant).
void delta_gates_backward(float* da, float* db, float* dA_log, float* ddt_bias, const float* dg,
                          const float* dbeta, const float* a, const float* b, int64_t ld, const float* A_log,
                          const float* dt_bias, int64_t B, int64_t T, int64_t H);

// y (N, C) = x * silu(z), z read from an (N, ldz) block. Backward writes dx (N, C) and dz into the
// z block's columns.
void silu_gate_forward(float* y, const float* x, const float* z, int64_t ldz, int64_t N, int64_t C);
// ... with y written in a GEMM operand form (operand.h): its only reader is the output projection.
void silu_gate_forward(void* y, OperandForm form, const float* x, const float* z, int64_t ldz, int64_t N, int64_t C);
void silu_gate_backward(float* dx, float* dz, const float* dy, const float* x, const float* z, int64_t ldz,
                        int64_t N, int64_t C);

// heads (B, H, T, Dh) <- columns [0, H Dh) of the token-major (N, ld) block at src; backward writes
// those columns.
void gather_heads(float* heads, const float* src, int64_t ld, int64_t B, int64_t T, int64_t H, int64_t Dh);
void gather_heads_backward(float* dsrc, const float* dheads, int64_t ld, int64_t B, int64_t T, int64_t H,
                           int64_t Dh);

}  // namespace mt
