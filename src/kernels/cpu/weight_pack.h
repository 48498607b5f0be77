// weight_pack.h — a weight operand copied into the blocked layout a GEMM
// kernel reads, as oneDNN's reorder would copy it, at memory speed. oneDNN
// 2.6's reorder into its brgemm matmul's layout moves about one element a
// cycle (97 us for one 704 x 512 bf16 expert weight on AMD Zen 5, in cache),
// and every expert weight is packed twice a step (bench:
// gemm_packing/pack/*). Data movement only: the same bytes as the reorder
// (WeightPack.SameBytesAsOnednnsReorder), padding zeroed.
#pragma once
#include <cstdint>
#include <optional>

#include <oneapi/dnnl/dnnl.hpp>

namespace mt {

// The layout: blocks of k_block x n_block elements of op(B) (K x N), the
// blocks of one column of blocks (all K for n_block columns) after each
// other, columns of blocks after each other; inside a block, rows of n_block
// elements, each element `pair` consecutive values of K (pair = 2: the bf16
// "VNNI" form, two K rows interleaved per column; 1 otherwise). K and N are
// padded with zeros to whole blocks.
struct BlockedLayout {
  int64_t k_block = 0, n_block = 0, pair = 1;
  int64_t k_padded = 0, n_padded = 0;
  int64_t bytes(int64_t elem_bytes) const { return k_padded * n_padded * elem_bytes; }
};

// op(B)(k, n) = src[k * stride_k + n * stride_n], one stride 1 (B as stored,
// stride_n == 1, or transposed, stride_k == 1). fp32: pair must be 1; bf16
// (raw 16-bit patterns): pair must be 2.
void pack_blocked_f32(float* dst, const float* src, int64_t K, int64_t N, int64_t stride_k, int64_t stride_n,
                      const BlockedLayout& L);
void pack_blocked_bf16(uint16_t* dst, const uint16_t* src, int64_t K, int64_t N, int64_t stride_k,
                       int64_t stride_n, const BlockedLayout& L);

// The layout of a packed weight as oneDNN describes it, where it is one of
// the above (its brgemm matmul's on AVX-512: inner blocks 16@K 64@N for
// fp32, 16@K 64@N 2@K for bf16); nothing for any other (AMX tiles, AVX2),
// which oneDNN's own reorder then fills.
std::optional<BlockedLayout> blocked_layout_of(const dnnl::memory::desc& layout);

// op(B), described by `plain` (K x N, strides of a plain layout), packed
// into `layout`'s memory at dst: by the copies above where
// blocked_layout_of() knows the layout, else by oneDNN's reorder on `strm`.
void pack_weight(void* dst, const dnnl::memory::desc& layout, const void* src, const dnnl::memory::desc& plain,
                 const dnnl::engine& eng, dnnl::stream& strm);

}  // namespace mt
