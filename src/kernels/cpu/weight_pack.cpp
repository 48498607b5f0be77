// weight_pack.cpp — block by block: rows copied (B as stored), or whole
// register tiles transposed (B read transposed; a bf16 pair of K is one
// 32-bit word, so the pairs move as fp32 lanes do), padding zeroed.
// GCC 12 reports _mm512_undefined_ps() inside the unpack intrinsics of
// simd::transpose_tile as uninitialized where they are inlined here (its
// header's self-initialised placeholder; machine_peak.cpp meets the same).
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/cpu/weight_pack.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include <omp.h>

#include "core/check.h"
#include "kernels/cpu/simd.h"

namespace mt {
namespace {

struct Block {
  int64_t k0, n0, kv, nv;  // first row and column of op(B), and how many are real (not padding)
};

template <typename T, typename Fill>
void for_each_block(T* dst, int64_t K, int64_t N, const BlockedLayout& L, Fill&& fill) {
  const int64_t kblocks = L.k_padded / L.k_block, nblocks = L.n_padded / L.n_block;
  const int64_t size = L.k_block * L.n_block;
  const int64_t block_bytes = size * int64_t(sizeof(T));
  // Each block is assembled in L1 and written out with non-temporal stores:
  // the packed copy is read next from memory (by the next step's products),
  // and whole-line stores skip reading its old lines first (336 MB a step
  // for moe-512 bf16). Blocks that do not fit the buffer or are not
  // line-aligned are written in place.
  constexpr int64_t kStage = 16384;
  const bool staged = block_bytes <= kStage && block_bytes % 64 == 0 && reinterpret_cast<uintptr_t>(dst) % 64 == 0;
  // Columns of blocks on all threads for a weight packed outside a parallel
  // region (the projections'); one thread inside one (an expert task's).
  const bool big = L.k_padded * L.n_padded * int64_t(sizeof(T)) >= (int64_t(1) << 20);
#pragma omp parallel for schedule(static) if (big && !omp_in_parallel())
  for (int64_t nb = 0; nb < nblocks; ++nb) {
    alignas(64) static thread_local unsigned char stage[kStage];
    for (int64_t kb = 0; kb < kblocks; ++kb) {
      T* out = dst + (nb * kblocks + kb) * size;
      T* at = staged ? reinterpret_cast<T*>(stage) : out;
      const Block b{kb * L.k_block, nb * L.n_block, std::clamp<int64_t>(K - kb * L.k_block, 0, L.k_block),
                    std::clamp<int64_t>(N - nb * L.n_block, 0, L.n_block)};
      if (b.kv < L.k_block || b.nv < L.n_block) std::fill(at, at + size, T(0));
      fill(at, b);
      if (staged) simd::stream_copy(out, stage, block_bytes);
    }
    if (staged) simd::stream_fence();
  }
}

void check_layout(int64_t K, int64_t N, int64_t stride_k, int64_t stride_n, const BlockedLayout& L) {
  MT_CHECK(L.k_block > 0 && L.n_block > 0 && L.k_block % L.pair == 0 && L.k_padded >= K && L.n_padded >= N &&
               L.k_padded % L.k_block == 0 && L.n_padded % L.n_block == 0,
           "pack_blocked: layout of {} x {} blocks does not hold {} x {}", L.k_block, L.n_block, K, N);
  MT_CHECK(stride_k == 1 || stride_n == 1, "pack_blocked: one stride must be 1 ({}, {})", stride_k, stride_n);
}

}  // namespace

void pack_blocked_f32(float* dst, const float* src, int64_t K, int64_t N, int64_t stride_k, int64_t stride_n,
                      const BlockedLayout& L) {
  check_layout(K, N, stride_k, stride_n, L);
  MT_CHECK(L.pair == 1, "pack_blocked_f32: fp32 has no pairs");
  const int64_t NB = L.n_block;
  for_each_block(dst, K, N, L, [&](float* out, const Block& b) {
    if (stride_n == 1) {
      for (int64_t k = 0; k < b.kv; ++k)
        std::memcpy(out + k * NB, src + (b.k0 + k) * stride_k + b.n0, size_t(b.nv) * sizeof(float));
    } else {  // out[k][n] = B(k, n) = src[n * stride_n + k]
      simd::transpose(out, src + b.n0 * stride_n + b.k0, b.nv, b.kv, stride_n, NB);
    }
  });
}

void pack_blocked_bf16(uint16_t* dst, const uint16_t* src, int64_t K, int64_t N, int64_t stride_k,
                       int64_t stride_n, const BlockedLayout& L) {
  check_layout(K, N, stride_k, stride_n, L);
  MT_CHECK(L.pair == 2, "pack_blocked_bf16: pairs of {}, not 2", L.pair);
  const int64_t NB = L.n_block;
  // Word a * NB + n of a block holds B(k0 + 2a, n) in its low half and
  // B(k0 + 2a + 1, n) in its high half (little-endian: the lower address).
  for_each_block(dst, K, N, L, [&](uint16_t* out, const Block& b) {
    uint32_t* words = reinterpret_cast<uint32_t*>(out);
    const int64_t full = b.kv / 2;  // pairs with both rows real
    if (stride_n == 1) {
      for (int64_t a = 0; a < (b.kv + 1) / 2; ++a) {
        const uint16_t* lo = src + (b.k0 + 2 * a) * stride_k + b.n0;
        uint32_t* w = words + a * NB;
        if (a < full) {
          const uint16_t* hi = lo + stride_k;
          for (int64_t n = 0; n < b.nv; ++n) w[n] = uint32_t(lo[n]) | uint32_t(hi[n]) << 16;
        } else {
          for (int64_t n = 0; n < b.nv; ++n) w[n] = uint32_t(lo[n]);
        }
      }
      return;
    }
    // B read transposed: row n of src holds B(., n), so B(k, n) and
    // B(k + 1, n) are one aligned word where the row and k0 are even.
    const uint16_t* base = src + b.n0 * stride_n + b.k0;
    const bool words_aligned = stride_n % 2 == 0 && reinterpret_cast<uintptr_t>(base) % 4 == 0;
    const int64_t tile = simd::kLanes, ld = stride_n / 2;
    // Whole register tiles of words (bit patterns moved as fp32 lanes:
    // loads, shuffles and stores only); the rest word by word.
    const int64_t n_tiles = words_aligned ? b.nv / tile * tile : 0, a_tiles = words_aligned ? full / tile * tile : 0;
    for (int64_t n = 0; n < n_tiles; n += tile)
      for (int64_t a = 0; a < a_tiles; a += tile)
        simd::transpose_tile(reinterpret_cast<float*>(words + a * NB + n),
                             reinterpret_cast<const float*>(base + n * stride_n + 2 * a), ld, NB);
    auto word = [&](int64_t a, int64_t n) {
      const uint16_t* col = base + n * stride_n + 2 * a;
      words[a * NB + n] = uint32_t(col[0]) | (2 * a + 1 < b.kv ? uint32_t(col[1]) << 16 : 0u);
    };
    for (int64_t a = 0; a < (b.kv + 1) / 2; ++a)
      for (int64_t n = a < a_tiles ? n_tiles : 0; n < b.nv; ++n) word(a, n);
  });
}

std::optional<BlockedLayout> blocked_layout_of(const dnnl::memory::desc& layout) {
  const dnnl_memory_desc_t& d = layout.data;
  if (d.ndims != 2 || d.format_kind != dnnl_blocked || d.offset0 != 0) return std::nullopt;
  const dnnl_blocking_desc_t& bd = d.format_desc.blocking;
  BlockedLayout L;
  if (bd.inner_nblks == 2 && bd.inner_idxs[0] == 0 && bd.inner_idxs[1] == 1) {
    L.k_block = bd.inner_blks[0];
    L.n_block = bd.inner_blks[1];
  } else if (bd.inner_nblks == 3 && bd.inner_idxs[0] == 0 && bd.inner_idxs[1] == 1 && bd.inner_idxs[2] == 0) {
    L.pair = bd.inner_blks[2];
    L.k_block = bd.inner_blks[0] * L.pair;
    L.n_block = bd.inner_blks[1];
  } else {
    return std::nullopt;
  }
  L.k_padded = d.padded_dims[0];
  L.n_padded = d.padded_dims[1];
  const int64_t elem = d.data_type == dnnl_f32 ? 4 : d.data_type == dnnl_bf16 ? 2 : 0;
  if (elem == 0 || L.pair != (elem == 4 ? 1 : 2) || L.k_padded % L.k_block != 0 || L.n_padded % L.n_block != 0)
    return std::nullopt;
  const int64_t block = L.k_block * L.n_block;
  if (bd.strides[0] != block || bd.strides[1] != L.k_padded / L.k_block * block ||
      int64_t(layout.get_size()) != L.bytes(elem))
    return std::nullopt;
  return L;
}

void pack_weight(void* dst, const dnnl::memory::desc& layout, const void* src, const dnnl::memory::desc& plain,
                 const dnnl::engine& eng, dnnl::stream& strm) {
  const dnnl_memory_desc_t& p = plain.data;
  const std::optional<BlockedLayout> L = blocked_layout_of(layout);
  const bool plain_ok = p.ndims == 2 && p.format_kind == dnnl_blocked && p.format_desc.blocking.inner_nblks == 0 &&
                        p.offset0 == 0 && p.data_type == layout.data.data_type &&
                        (p.format_desc.blocking.strides[0] == 1 || p.format_desc.blocking.strides[1] == 1);
  if (L && plain_ok) {
    const int64_t K = p.dims[0], N = p.dims[1], sk = p.format_desc.blocking.strides[0],
                  sn = p.format_desc.blocking.strides[1];
    if (p.data_type == dnnl_f32)
      pack_blocked_f32(static_cast<float*>(dst), static_cast<const float*>(src), K, N, sk, sn, *L);
    else
      pack_blocked_bf16(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), K, N, sk, sn, *L);
    return;
  }
  dnnl::memory from(plain, eng, const_cast<void*>(src)), to(layout, eng, dst);
  dnnl::reorder(from, to).execute(strm, from, to);
  strm.wait();
}

}  // namespace mt
