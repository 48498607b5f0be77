// grouped_swiglu.h — all routed experts of a layer in one parallel loop (a
// grouped GEMM over the capacity layout): expert i's SwiGLU MLP runs on its
// rows [begin[i], begin[i + 1]) of x, y = (silu(x W1ᵀ) * (x W3ᵀ)) W2ᵀ, as
// in swiglu_ffn.h. Used by the MoE block for the experts this process holds.
//
// Tasks, each on one thread through gemm_on_thread (a primitive planned for
// one thread), so results do not depend on the thread count: one per
// expert, largest first, scheduled dynamically.
// - forward: the expert's row tiles of up to kGroupedRowTile rows, each
//   tile's two products and its SwiGLU back to back, in cache;
// - backward: the same tiles for the input gradient, then the weight
//   gradients in blocks of up to kGroupedWeightBlock rows of dW, each
//   summing over all of the expert's rows in one product while the tiles'
//   dh13 and dy are still in this core's cache.
// An expert's weights are read by one core only (once from memory, then from
// its cache), and the bits are those of the same products in any order.
// One parallel region per pass instead of three GEMM calls per expert, each
// with its own fork and join, and expert products that are bitwise the same
// at any thread count (oneDNN's threaded GEMM promises only agreement to
// rounding). Measurements: docs/performance.md, "Grouped expert GEMMs" and
// "Zen 5: one task per expert". The block sizes are constants, never
// derived from the thread count.
#pragma once
#include <cstdint>

#include "kernels/cpu/gemm.h"

namespace mt {

// Row tiles of at most 256 rows, a segment split evenly (grouped_swiglu.cpp):
// 128, 256 and whole segments measured level on moe-512's experts (AVX2),
// and 256 packs each expert's weights half as often as 128. The weight
// gradients take whole tensors up to 1024 rows, which measured 5-10% faster
// than 128-row blocks (oneDNN packs the operand it reuses once per product).
inline constexpr int64_t kGroupedRowTile = 256;
inline constexpr int64_t kGroupedWeightBlock = 1024;

struct ExpertGroup {
  int64_t count = 0;               // experts
  const int64_t* begin = nullptr;  // (count + 1) row offsets into x, y, h13, z
  int64_t F = 0, Din = 0;          // expert hidden width, input width
  const float* const* w13 = nullptr;  // per expert: (2F, Din), W1 then W3
  const float* const* w2 = nullptr;   // per expert: (Din, F)
};

// y (rows, Din) written; h13 (rows, 2F) and z (rows, F) saved for the
// backward. z is held in the operand form of p (operand.h: bf16 where this
// CPU multiplies bf16 natively), since only products read it; its storage
// is rows·F floats in every form.
void grouped_swiglu_forward(float* y, float* h13, void* z, const float* x, const ExpertGroup& g, MatmulPrecision p);

// dx (rows, Din) written; dw13[i], dw2[i] added into or written, each with its
// own beta (gemm.h's WeightGrad: 0 where the expert's gradient holds zeros
// nothing else wrote, so that its products need not read them); z as the forward
// left it; dh13 (storage of rows·2F floats) is scratch, written in the
// operand form of p for the products that read it.
void grouped_swiglu_backward(float* dx, const WeightGrad* dw13, const WeightGrad* dw2, void* dh13, const float* dy,
                             const float* x, const float* h13, const void* z, const ExpertGroup& g, MatmulPrecision p);

}  // namespace mt
