// gated_delta.h — the gated delta rule (Gated DeltaNet: Yang, Kautz & Hatamizadeh, ICLR 2025), per head:
//   S_t = a_t S_{t-1} (I - b_t k_t k_t^T) + b_t v_t k_t^T,   o_t = S_t q_t,   S_0 = 0,   a_t = exp(g_t)
// with S (Dv, Dk). Trained in chunks of C steps (Yang et al. 2024, "Parallelizing Linear
// Transformers with the Delta Rule over Sequence Length", WY/UT form); cost O(T C (Dk + Dv) + T Dk Dv).
// Shapes: q, k (B, H, T, Dk); v, o (B, H, T, Dv); g, beta (B, H, T); states (B, H, NC, Dv, Dk) with
// NC = ceil(T / C): the state entering each chunk, written by forward and read by backward.
#pragma once
#include <cstdint>

namespace mt {

struct GatedDeltaDims {
  int64_t B, H, T, Dk, Dv;
  int64_t C;  // chunk length (>= 1)
  // (B, T) document start of every token (train.document_mask), or null. A
  // token that starts a document (doc_start[b, t] == t) starts from a zero
  // state: a_t = 0, so nothing of the previous document carries over, and
  // its gate g_t has no effect (its gradient is 0).
  const int32_t* doc_start = nullptr;
  // The chunk's matrix products with bf16 operands and fp32 accumulation (small_gemm_bf16.h), as
  // flash-linear-attention's chunk kernels run them at bf16: the layer asks for it at bf16
  // precision. Honoured where the build has AVX512-BF16 (gated_delta_bf16_products()); the UT
  // solve, the decays and the state carried between chunks stay fp32 either way.
  bool bf16_products = false;
  bool resets(int64_t b, int64_t t) const { return doc_start && t > 0 && doc_start[b * T + t] == t; }
};

// The UT transform of one chunk, shared by forward and backward: Tm = (I + A)^{-1}
// for A (n x n) strictly lower triangular, by forward substitution; row-major.
void gated_delta_ut_inverse(float* Tm, const float* A, int64_t n);

// The chunk's decay matrix, shared by forward and backward: Mx (n x n, row-major) with
// Mx_ij = e^{gam_i - gam_j} for j <= i and 0 above the diagonal (a vectorised exp, ~2 ulp).
void gated_delta_decays(float* Mx, const float* gam, int64_t n);

// Whether this build multiplies the chunks in bf16 when GatedDeltaDims::bf16_products asks.
bool gated_delta_bf16_products();

// Chunks per sequence: ceil(T / C).
int64_t gated_delta_chunks(const GatedDeltaDims& d);

// Chunked forward (every (batch, head) is one serial task: thread-count invariant).
void gated_delta_forward(float* o, float* states, const float* q, const float* k, const float* v,
                         const float* g, const float* beta, const GatedDeltaDims& d);

// All gradients written. Chunked (gated_delta_backward.cpp): each chunk's UT quantities are
// recomputed from the saved chunk-entry state and the forward's matrix products differentiated in
// reverse, dS carried from the last chunk to the first; same order of cost as the forward.
void gated_delta_backward(float* dq, float* dk, float* dv, float* dg, float* dbeta, const float* dout,
                          const float* q, const float* k, const float* v, const float* g, const float* beta,
                          const float* states, const GatedDeltaDims& d);

// The same gradients by an exact reverse-time pass, one step at a time (each chunk's states
// recomputed from the saved entry state, O(T Dk Dv), one chunk of states per thread): the
// reference the chunked backward is tested and benchmarked against; the layer does not call it.
void gated_delta_backward_sequential(float* dq, float* dk, float* dv, float* dg, float* dbeta, const float* dout,
                                     const float* q, const float* k, const float* v, const float* g, const float* beta,
                                     const float* states, const GatedDeltaDims& d);

// The plain recurrence, one step at a time: the reference the chunked form is tested against,
// and the decoder's per-token update. state (B, H, Dv, Dk) holds S on entry (zeros for a fresh
// sequence) and the state after the last step on exit. d.C is not read.
void gated_delta_recurrent(float* o, float* state, const float* q, const float* k, const float* v,
                           const float* g, const float* beta, const GatedDeltaDims& d);

// Forward FLOPs per token per head of the chunked form with chunks of C, c = (C + 1) / 2 the
// mean row of a C x C triangle: Q K^T and K K^T (4 c Dk), the UT products Tm K and Tm V
// (2 c (Dk + Dv)), (M o Q K^T) U (2 c Dv), and the three state products W S^T, Q S^T, U^T K
// (6 Dk Dv). The kernels multiply only the triangles (simd::Triangle), strips of 8 rows at a time.
double gated_delta_flops_per_token(int64_t Dk, int64_t Dv, int64_t C);

}  // namespace mt
