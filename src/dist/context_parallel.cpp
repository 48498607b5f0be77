// context_parallel.cpp — see context_parallel.h. Rows of one chunk are
// consecutive positions, so every copy below moves a chunk's rows of one
// (sequence, head) at once.
#include "dist/context_parallel.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "model/context_chunks.h"

namespace mt {
namespace {

// Byte offset of row `row` of (b, h) = bh in a (B, heads, rows, width) tensor.
int64_t at(int64_t bh, int64_t rows, int64_t row, int64_t row_bytes) { return (bh * rows + row) * row_bytes; }

}  // namespace

ContextParallel::ContextParallel(Comm& group, int64_t T)
    : comm_(group), T_(T), cp_(group.size()), rank_(group.rank()), c_(context_chunk_len(T, group.size())) {
  MT_CHECK(T % (2 * cp_) == 0, "sequence of {} tokens in 2 x {} chunks", T, cp_);
  pos_ = context_positions(T, cp_, rank_);
}

void ContextParallel::gather(void* full_v, const void* local_v, int64_t B, int64_t heads, int64_t width,
                             int64_t elem_bytes, int64_t window) {
  auto* full = static_cast<uint8_t*>(full_v);
  const auto* local = static_cast<const uint8_t*>(local_v);
  const int64_t row = width * elem_bytes, Tl = 2 * c_, BH = B * heads, chunk = c_ * row;
  if (global(window)) {
    const int64_t n = BH * Tl * row;
    if (int64_t(recv_.size()) < cp_ * n) recv_.resize(size_t(cp_ * n));
    std::vector<int64_t> counts(static_cast<size_t>(cp_), n), displs(static_cast<size_t>(cp_));
    for (int64_t r = 0; r < cp_; ++r) displs[size_t(r)] = r * n;
    auto req = comm_.iallgatherv(local, n, recv_.data(), counts.data(), displs.data(), DType::kU8, CommKind::kContext);
    comm_.wait(req.get(), "context-parallel K/V all-gather");
    for (int64_t r = 0; r < cp_; ++r) {
      const auto [j0, j1] = context_chunks(r, cp_);
      for (int64_t bh = 0; bh < BH; ++bh)
        for (int64_t k = 0; k < 2; ++k)
          std::memcpy(full + at(bh, T_, (k ? j1 : j0) * c_, row), recv_.data() + r * n + at(bh, Tl, k * c_, row),
                      size_t(chunk));
    }
    return;
  }
  const int64_t h = halo(window);
  MT_CHECK(h <= c_, "a window of {} needs a halo of {} rows, more than a chunk's {}", window, h, c_);
  std::memset(full, 0, size_t(BH * T_ * row));  // rows no query reads (the tiled kernel may touch them)
  const auto [j0, j1] = context_chunks(rank_, cp_);
  for (int64_t bh = 0; bh < BH; ++bh)
    for (int64_t k = 0; k < 2; ++k)
      std::memcpy(full + at(bh, T_, (k ? j1 : j0) * c_, row), local + at(bh, Tl, k * c_, row), size_t(chunk));
  if (h == 0) return;
  // The last h rows of each of our chunks go to the owner of the next chunk.
  const int64_t piece = BH * h * row;
  std::vector<int64_t> sc(size_t(cp_), 0), sd(size_t(cp_), 0), rc(size_t(cp_), 0), rd(size_t(cp_), 0);
  if (int64_t(send_.size()) < 2 * piece) send_.resize(size_t(2 * piece));
  if (int64_t(recv_.size()) < 2 * piece) recv_.resize(size_t(2 * piece));
  int64_t sent = 0, got = 0;
  for (int64_t k = 0; k < 2; ++k) {
    const int64_t j = k ? j1 : j0;
    if (j + 1 < 2 * cp_ && context_chunk_owner(j + 1, cp_) != rank_) {
      const int64_t to = context_chunk_owner(j + 1, cp_);
      sc[size_t(to)] = piece, sd[size_t(to)] = sent;
      for (int64_t bh = 0; bh < BH; ++bh)
        std::memcpy(send_.data() + sent + bh * h * row, local + at(bh, Tl, k * c_ + c_ - h, row), size_t(h * row));
      sent += piece;
    }
    if (j > 0 && context_chunk_owner(j - 1, cp_) != rank_) {
      const int64_t from = context_chunk_owner(j - 1, cp_);
      rc[size_t(from)] = piece, rd[size_t(from)] = got;
      got += piece;
    }
  }
  auto req = comm_.ialltoallv(send_.data(), sc.data(), sd.data(), recv_.data(), rc.data(), rd.data(), DType::kU8,
                              CommKind::kContext);
  comm_.wait(req.get(), "context-parallel K/V halo exchange");
  for (int64_t k = 0; k < 2; ++k) {
    const int64_t j = k ? j1 : j0;
    if (j == 0 || context_chunk_owner(j - 1, cp_) == rank_) continue;
    const int64_t from = context_chunk_owner(j - 1, cp_);
    for (int64_t bh = 0; bh < BH; ++bh)
      std::memcpy(full + at(bh, T_, j * c_ - h, row), recv_.data() + rd[size_t(from)] + bh * h * row, size_t(h * row));
  }
}

void ContextParallel::reduce(float* local, const float* full, int64_t B, int64_t heads, int64_t width, int64_t window) {
  const int64_t Tl = 2 * c_, BH = B * heads;
  const auto [j0, j1] = context_chunks(rank_, cp_);
  if (global(window)) {
    // Every rank's full gradient rows at rank d's positions, for rank d; summed in rank order.
    const int64_t n = BH * Tl * width;
    if (int64_t(send_.size()) < int64_t(sizeof(float)) * cp_ * n) send_.resize(sizeof(float) * size_t(cp_ * n));
    float* send = reinterpret_cast<float*>(send_.data());
    for (int64_t d = 0; d < cp_; ++d) {
      const auto [a0, a1] = context_chunks(d, cp_);
      for (int64_t bh = 0; bh < BH; ++bh)
        for (int64_t k = 0; k < 2; ++k)
          std::copy_n(full + ((bh * T_) + (k ? a1 : a0) * c_) * width, c_ * width,
                      send + d * n + (bh * Tl + k * c_) * width);
    }
    std::vector<int64_t> counts(static_cast<size_t>(cp_), n), displs(static_cast<size_t>(cp_));
    for (int64_t d = 0; d < cp_; ++d) displs[size_t(d)] = d * n;
    if (int64_t(sum_scratch_.size()) < cp_ * n) sum_scratch_.resize(size_t(cp_ * n));
    ReduceScatter rs;
    rs.start(comm_, send, counts.data(), displs.data(), sum_scratch_.data(), CommKind::kContext);
    rs.finish(local, ReduceScatter::Mode::kOverwrite, "context-parallel dK/dV reduce-scatter");
    return;
  }
  for (int64_t bh = 0; bh < BH; ++bh)
    for (int64_t k = 0; k < 2; ++k)
      std::copy_n(full + (bh * T_ + (k ? j1 : j0) * c_) * width, c_ * width, local + (bh * Tl + k * c_) * width);
  const int64_t h = halo(window);
  if (h == 0) return;
  // Halo gradients back: the h rows before each of our chunks to that chunk's
  // owner, which adds them to the last h rows of its chunk.
  const int64_t piece = BH * h * width;
  std::vector<int64_t> sc(size_t(cp_), 0), sd(size_t(cp_), 0), rc(size_t(cp_), 0), rd(size_t(cp_), 0);
  if (int64_t(send_.size()) < int64_t(sizeof(float)) * 2 * piece) send_.resize(sizeof(float) * size_t(2 * piece));
  if (int64_t(sum_scratch_.size()) < 2 * piece) sum_scratch_.resize(size_t(2 * piece));
  float* send = reinterpret_cast<float*>(send_.data());
  int64_t sent = 0, got = 0;
  for (int64_t k = 0; k < 2; ++k) {
    const int64_t j = k ? j1 : j0;
    if (j > 0 && context_chunk_owner(j - 1, cp_) != rank_) {
      const int64_t to = context_chunk_owner(j - 1, cp_);
      sc[size_t(to)] = piece, sd[size_t(to)] = sent;
      for (int64_t bh = 0; bh < BH; ++bh)
        std::copy_n(full + (bh * T_ + j * c_ - h) * width, h * width, send + sent + bh * h * width);
      sent += piece;
    }
    if (j + 1 < 2 * cp_ && context_chunk_owner(j + 1, cp_) != rank_) {
      const int64_t from = context_chunk_owner(j + 1, cp_);
      rc[size_t(from)] = piece, rd[size_t(from)] = got;
      got += piece;
    }
  }
  auto req = comm_.ialltoallv(send, sc.data(), sd.data(), sum_scratch_.data(), rc.data(), rd.data(), DType::kF32,
                              CommKind::kContext);
  comm_.wait(req.get(), "context-parallel dK/dV halo exchange");
  for (int64_t k = 0; k < 2; ++k) {
    const int64_t j = k ? j1 : j0;
    if (j + 1 >= 2 * cp_ || context_chunk_owner(j + 1, cp_) == rank_) continue;
    const int64_t from = context_chunk_owner(j + 1, cp_);
    for (int64_t bh = 0; bh < BH; ++bh) {
      float* dst = local + (bh * Tl + k * c_ + c_ - h) * width;
      const float* src = sum_scratch_.data() + rd[size_t(from)] + bh * h * width;
      for (int64_t e = 0; e < h * width; ++e) dst[e] += src[e];
    }
  }
}

}  // namespace mt
