// moe_dispatch.h — static-capacity assignment of routed tokens to expert
// slots, and the gather (permute) / weighted combine (unpermute) around the
// experts. Expert e owns rows [begin[e], begin[e+1]) of the expert buffer,
// filled group by group, tokens in index order, and padded with zero rows to a
// multiple of `row_align` (keeps GEMM shapes few and aligned).
// Capacity: with cap > 0 each expert keeps at most `cap` assignments per
// routing group of G tokens, chosen by `DropOrder`; the rest are dropped
// (slot -1: no expert output, no gradient).
#pragma once
#include <cstdint>

namespace mt {

// Which `cap` assignments an over-full expert keeps within a routing group.
//   kScore    the highest router scores, ties by lower token index (as
//             Megatron-LM's --moe-token-drop-policy probs, which ranks gates).
//   kArrival  the first to arrive (Megatron-LM --moe-token-drop-policy
//             position): Megatron routes a (T, B)-major view of the
//             micro-batch, so an assignment arrives before another when its
//             token sits earlier in its sequence, then (a group spanning
//             several sequences) in an earlier sequence of the group. Within
//             a group of one sequence, or part of one, that is token order.
//             A token takes an expert once at most, so its k slot never
//             decides (Megatron's routing map has no k either).
enum class DropOrder { kScore, kArrival };

struct DispatchDims {
  int64_t N, E, K;
  int64_t group;      // G tokens per routing group
  int64_t capacity;   // slots per expert per group; 0 = dropless
  int64_t row_align;  // expert segments padded to a multiple of this
  DropOrder order = DropOrder::kScore;
  int64_t seq_len = 0;  // T tokens per sequence (kArrival with G > T); 0 = every group within one sequence
};

// Upper bound on expert-buffer rows for these dims (buffers are sized with it).
int64_t moe_max_rows(const DispatchDims& d);

// slot (N, K); begin (E + 1); row_token (moe_max_rows) = token of each row or
// -1 for padding. Returns the number of dropped assignments. kept (E) = kept
// assignments per expert (pre-padding), for load metrics.
int64_t moe_assign(int32_t* slot, int64_t* begin, int32_t* row_token, int64_t* kept,
                   const int32_t* idx, const float* scores, const DispatchDims& d);

// xe (rows, C) = x[row_token[r]] (zero rows for padding); x (N, C) with leading dim ldx.
void moe_gather(float* xe, const float* x, const int32_t* row_token, int64_t rows, int64_t C,
                int64_t ldx);
// dx (N, C) += sum over k (in k order) of dxe[slot[n, k]].
void moe_gather_backward(float* dx, const float* dxe, const int32_t* slot, int64_t N, int64_t K,
                         int64_t C);

// out (N, C) = beta * out + sum_k gate[n, k] * ye[slot[n, k]].
void moe_combine(float* out, const float* ye, const int32_t* slot, const float* gate, int64_t N,
                 int64_t K, int64_t C, float beta);
// out (N, C) = base + the combine above (beta 0), the two added as one
// last addition per element: the bits of moe_combine into a buffer and an
// element-wise add, without writing that buffer and reading it back (a
// residual stream's 8 MB each way per moe-512 layer). out may be base.
void moe_combine_add(float* out, const float* base, const float* ye, const int32_t* slot, const float* gate, int64_t N,
                     int64_t K, int64_t C);
// dye (rows, C) written (padding rows zero); dgate (N, K) written.
void moe_combine_backward(float* dye, float* dgate, const float* dout, const float* ye,
                          const int32_t* slot, const float* gate, const int32_t* row_token,
                          int64_t rows, int64_t N, int64_t K, int64_t C);

}  // namespace mt
