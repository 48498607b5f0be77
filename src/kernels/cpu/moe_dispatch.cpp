// moe_dispatch.cpp — assignment is serial (N*K entries, cheap, and the order
// is the contract); data movement is row-parallel. Both drop orders rank each
// over-full (group, expert) by a strict order, so the kept set is a pure
// function of idx and scores.
#include "kernels/cpu/moe_dispatch.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace mt {
namespace {
// Per-thread work buffers, grown on first use and reused: no allocation after
// the first step (docs/kernels.md lists every kernel that does this).
struct AssignScratch {
  std::vector<int64_t> count, start, cand, fill, order;
  std::vector<char> keep;
};
thread_local AssignScratch tls;
}  // namespace

int64_t moe_max_rows(const DispatchDims& d) {
  int64_t assigned = d.N * d.K;
  if (d.capacity > 0) assigned = std::min(assigned, (d.N / d.group) * d.capacity * d.E);
  return assigned + d.E * (d.row_align - 1);
}

int64_t moe_assign(int32_t* slot, int64_t* begin, int32_t* row_token, int64_t* kept,
                   const int32_t* idx, const float* scores, const DispatchDims& d) {
  const int64_t groups = d.N / d.group;
  // Candidates per (group, expert) as flat assignment ids n*K + k, in token order.
  AssignScratch& w = tls;
  auto& count = w.count;
  auto& start = w.start;
  auto& cand = w.cand;
  auto& fill = w.fill;
  count.assign(groups * d.E, 0);
  for (int64_t a = 0; a < d.N * d.K; ++a) count[(a / d.K / d.group) * d.E + idx[a]]++;
  start.assign(groups * d.E + 1, 0);
  for (int64_t i = 0; i < groups * d.E; ++i) start[i + 1] = start[i] + count[i];
  cand.resize(d.N * d.K);
  fill.assign(start.begin(), start.end() - 1);
  for (int64_t a = 0; a < d.N * d.K; ++a) cand[fill[(a / d.K / d.group) * d.E + idx[a]]++] = a;

  int64_t dropped = 0;
  for (int64_t a = 0; a < d.N * d.K; ++a) slot[a] = -1;
  auto& keep = w.keep;
  keep.assign(d.N * d.K, 1);
  if (d.capacity > 0) {
    auto& order = w.order;
    // kArrival in a group of `seqs` whole sequences: a token's arrival rank is
    // its position times seqs plus its sequence within the group (the (T, B)
    // order Megatron-LM routes in). One sequence or less: token order, which
    // the candidates already are in.
    const int64_t seqs = d.seq_len > 0 && d.group > d.seq_len ? d.group / d.seq_len : 1;
    auto arrival = [&](int64_t a) {
      const int64_t i = (a / d.K) % d.group;
      return (i % d.seq_len) * seqs + i / d.seq_len;
    };
    for (int64_t ge = 0; ge < groups * d.E; ++ge) {
      if (count[ge] <= d.capacity) continue;
      order.assign(cand.begin() + start[ge], cand.begin() + start[ge + 1]);
      const int64_t e = ge % d.E;
      if (d.order == DropOrder::kScore)
        std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
          return scores[(x / d.K) * d.E + e] > scores[(y / d.K) * d.E + e];
        });
      else if (seqs > 1)
        std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return arrival(x) < arrival(y); });
      for (size_t i = size_t(d.capacity); i < order.size(); ++i) {
        keep[order[i]] = 0;
        ++dropped;
      }
    }
  }
  int64_t row = 0;
  for (int64_t e = 0; e < d.E; ++e) {
    begin[e] = row;
    kept[e] = 0;
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t ge = g * d.E + e;
      for (int64_t i = start[ge]; i < start[ge + 1]; ++i) {
        const int64_t a = cand[i];
        if (!keep[a]) continue;
        slot[a] = int32_t(row);
        row_token[row++] = int32_t(a / d.K);
        kept[e]++;
      }
    }
    while ((row - begin[e]) % d.row_align != 0) row_token[row++] = -1;
  }
  begin[d.E] = row;
  return dropped;
}

void moe_gather(float* xe, const float* x, const int32_t* row_token, int64_t rows, int64_t C,
                int64_t ldx) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    if (row_token[r] < 0)
      std::memset(xe + r * C, 0, sizeof(float) * C);
    else
      std::memcpy(xe + r * C, x + int64_t(row_token[r]) * ldx, sizeof(float) * C);
  }
}

void moe_gather_backward(float* dx, const float* dxe, const int32_t* slot, int64_t N, int64_t K,
                         int64_t C) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      const int32_t s = slot[n * K + k];
      if (s < 0) continue;
      const float* src = dxe + int64_t(s) * C;
      float* dst = dx + n * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) dst[c] += src[c];
    }
}

namespace {
// o (C) += sum over k, in k order, of gate[k] ye[slot[k]]: token n's row of a combine.
inline void combine_row(float* o, const float* ye, const int32_t* slot, const float* gate, int64_t K, int64_t C) {
  for (int64_t k = 0; k < K; ++k) {
    const int32_t s = slot[k];
    if (s < 0) continue;
    const float g = gate[k];
    const float* y = ye + int64_t(s) * C;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) o[c] += g * y[c];
  }
}
}  // namespace

void moe_combine(float* out, const float* ye, const int32_t* slot, const float* gate, int64_t N,
                 int64_t K, int64_t C, float beta) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    float* o = out + n * C;
    if (beta == 0.0f) std::memset(o, 0, sizeof(float) * C);
    combine_row(o, ye, slot + n * K, gate + n * K, K, C);
  }
}

void moe_combine_add(float* out, const float* base, const float* ye, const int32_t* slot, const float* gate, int64_t N,
                     int64_t K, int64_t C) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    // The token's sum from zero, as moe_combine forms it, in the thread's
    // grow-only row (out may be base, so it cannot be formed in place).
    thread_local std::vector<float> row;
    if (int64_t(row.size()) < C) row.resize(size_t(C));
    float* sum = row.data();
    std::fill(sum, sum + C, 0.0f);
    combine_row(sum, ye, slot + n * K, gate + n * K, K, C);
    const float* b = base + n * C;
    float* o = out + n * C;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) o[c] = b[c] + sum[c];
  }
}

void moe_combine_backward(float* dye, float* dgate, const float* dout, const float* ye,
                          const int32_t* slot, const float* gate, const int32_t* row_token,
                          int64_t rows, int64_t N, int64_t K, int64_t C) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    if (row_token[r] < 0) std::memset(dye + r * C, 0, sizeof(float) * C);
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const float* go = dout + n * C;
    for (int64_t k = 0; k < K; ++k) {
      const int32_t s = slot[n * K + k];
      if (s < 0) {
        dgate[n * K + k] = 0.0f;
        continue;
      }
      const float g = gate[n * K + k];
      const float* y = ye + int64_t(s) * C;
      float* dy = dye + int64_t(s) * C;
      float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
      for (int64_t c = 0; c < C; ++c) {
        dot += go[c] * y[c];
        dy[c] = g * go[c];
      }
      dgate[n * K + k] = dot;
    }
  }
}

}  // namespace mt
