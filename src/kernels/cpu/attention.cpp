// attention.cpp — blocked attention on the CPU. For each (batch, head) and
// block of kQB queries, the keys that block can see (its causal/window band)
// are processed as small dense products through simd::small_gemm_acc:
//   S = Q K^T, P = softmax(S), O = P V      (forward; lse saved)
//   dP = dO V^T, dS = P (dP - rowsum(dO o O)), dQ = dS K, dK += dS^T Q, dV += P^T dO
// Work outside the band is never done, so local layers cost O(T * window).
// Every task owns its outputs and runs serially, so results are bitwise
// identical for any thread count. Scratch is per thread, grown on first use.
#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "kernels/cpu/attention_softmax.h"
#include "kernels/cpu/simd.h"

namespace mt {
namespace {

constexpr int64_t kQB = 32;  // queries per block
constexpr int64_t kLineFloats = 64 / sizeof(float);  // floats per cache line (prefetch stride)

struct Scratch {
  std::vector<float> kt, vt, s, dp;
  std::vector<float> ob;  // one block of o or dout, contiguous (token-major rows are H * Dv apart)
  void reserve(int64_t Dh, int64_t Dv, int64_t nk) {
    if (int64_t(kt.size()) < Dh * nk) kt.resize(Dh * nk);
    if (int64_t(vt.size()) < Dv * nk) vt.resize(Dv * nk);
    if (int64_t(ob.size()) < kQB * Dv) ob.resize(kQB * Dv);
    if (int64_t(s.size()) < kQB * nk) {
      s.resize(kQB * nk);
      dp.resize(kQB * nk);
    }
  }
};
// Per-thread, grow-only (docs/kernels.md): the block each task works on stays in L2.
thread_local Scratch tls;

}  // namespace

double attention_mean_keys(int64_t T, int64_t window) {
  double total = 0.0;
  for (int64_t i = 0; i < T; ++i) total += double(i - attention_key_begin(i, window) + 1);
  return total / double(T);
}

double attention_mean_keys(int64_t T, int64_t window, int64_t doc_tokens) {
  if (doc_tokens <= 0 || doc_tokens >= T) return attention_mean_keys(T, window);
  double total = 0.0;
  for (int64_t i = 0; i < T; ++i) total += double(i - attention_key_begin(i, window, i / doc_tokens * doc_tokens) + 1);
  return total / double(T);
}

double attention_keys(const int32_t* doc_start, int64_t B, int64_t T, int64_t window) {
  AttentionDims d{B, 1, 1, T, 1, window};
  d.doc_start = doc_start;
  return attention_keys(d);
}

std::vector<std::pair<int64_t, int64_t>> attention_query_blocks(const AttentionDims& d, int64_t rows) {
  std::vector<std::pair<int64_t, int64_t>> out;
  const int64_t n = d.q_rows();
  for (int64_t r0 = 0, r1; r0 < n; r0 = r1) {  // runs of consecutive positions
    for (r1 = r0 + 1; r1 < n && d.q_position(r1) == d.q_position(r1 - 1) + 1; ++r1) {
    }
    for (int64_t i0 = r0; i0 < r1; i0 += rows) out.emplace_back(i0, std::min(rows, r1 - i0));
  }
  return out;
}

double attention_keys(const AttentionDims& d) {
  double total = 0.0;
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t i = 0; i < d.q_rows(); ++i) total += double(d.q_position(i) - d.key_begin(b, i) + 1);
  return total;
}

void attention_forward(float* o, float* lse, const float* q, const float* k, const float* v,
                       const AttentionDims& d) {
  const int64_t Dh = d.Dh, Dv = d.v_dim(), T = d.T, Tq = d.q_rows(), group = d.H / d.Hkv;
  const float scale = 1.0f / std::sqrt(float(Dh));
  const auto blocks = attention_query_blocks(d, kQB);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t bh = 0; bh < d.B * d.H; ++bh) {
    const int64_t b = bh / d.H, h = bh % d.H, kvh = h / group;
    Scratch& sc = tls;
    sc.reserve(Dh, Dv, T);
    const float* qh = q + (b * d.H + h) * Tq * Dh;
    const float* kh = k + (b * d.Hkv + kvh) * T * Dh;
    const float* vh = v + (b * d.Hkv + kvh) * T * Dv;
    float* oh = o + d.out_offset(b, h);
    const int32_t* doc = d.doc_row(b);
    const int64_t ldo = d.out_stride();
    const bool strided = ldo != Dv;  // token-major rows: products go through sc.ob
    simd::transpose(sc.kt.data(), kh, T, Dh, Dh, T);  // Kt (Dh, T), once per head
    for (const auto& [i0, rows] : blocks) {
      // Rows i0.. are queries at positions p0.. (consecutive), keys [j0, p0 + rows).
      const int64_t p0 = d.q_position(i0), j0 = d.key_begin(b, i0), nk = p0 + rows - j0;
      if (strided)  // fetch the block's output lines for writing while it computes
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t e = 0; e < Dv; e += kLineFloats) __builtin_prefetch(oh + (i0 + r) * ldo + e, 1, 3);
      std::fill(sc.s.begin(), sc.s.begin() + rows * nk, 0.0f);
      simd::small_gemm_acc(sc.s.data(), qh + i0 * Dh, sc.kt.data() + j0, rows, nk, Dh, Dh, T, nk);
      attention_softmax_rows(sc.s.data(), rows, nk, p0, j0, d.window, doc ? doc + i0 : nullptr, scale, nullptr,
                             lse + (b * d.H + h) * Tq + i0);
      // Token-major rows are a power of two apart: the product goes through a
      // contiguous block (rows that far apart share a few L1 sets).
      float* ob = strided ? sc.ob.data() : oh + i0 * Dv;
      std::fill(ob, ob + rows * Dv, 0.0f);
      simd::small_gemm_acc(ob, sc.s.data(), vh + j0 * Dv, rows, Dv, nk, nk, Dv, Dv);
      if (strided)
        for (int64_t r = 0; r < rows; ++r) std::copy(ob + r * Dv, ob + (r + 1) * Dv, oh + (i0 + r) * ldo);
    }
  }
}

void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q,
                        const float* k, const float* v, const float* o, const float* lse,
                        const AttentionDims& d) {
  const int64_t Dh = d.Dh, Dv = d.v_dim(), T = d.T, Tq = d.q_rows(), group = d.H / d.Hkv;
  const float scale = 1.0f / std::sqrt(float(Dh));
  const auto blocks = attention_query_blocks(d, kQB);
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t kvh = 0; kvh < d.Hkv; ++kvh) {
      Scratch& sc = tls;
      sc.reserve(Dh, Dv, T);
      const float* kh = k + (b * d.Hkv + kvh) * T * Dh;
      const float* vh = v + (b * d.Hkv + kvh) * T * Dv;
      simd::transpose(sc.kt.data(), kh, T, Dh, Dh, T);  // once per kv head
      simd::transpose(sc.vt.data(), vh, T, Dv, Dv, T);
      float* dkh = dk + (b * d.Hkv + kvh) * T * Dh;
      float* dvh = dv + (b * d.Hkv + kvh) * T * Dv;
      const int32_t* doc = d.doc_row(b);
      std::fill(dkh, dkh + T * Dh, 0.0f);
      std::fill(dvh, dvh + T * Dv, 0.0f);
      for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h) {
        const float* qh = q + (b * d.H + h) * Tq * Dh;
        const float* oh = o + d.out_offset(b, h);
        const float* doh = dout + d.out_offset(b, h);
        const int64_t ldo = d.out_stride();
        const float* lh = lse + (b * d.H + h) * Tq;
        float* dqh = dq + (b * d.H + h) * Tq * Dh;
        for (size_t blk = 0; blk < blocks.size(); ++blk) {
          const auto [i0, rows] = blocks[blk];
          const int64_t i1 = i0 + rows, p0 = d.q_position(i0);
          const int64_t j0 = d.key_begin(b, i0), nk = p0 + rows - j0;
          float* P = sc.s.data();
          float* dS = sc.dp.data();
          std::fill(P, P + rows * nk, 0.0f);
          simd::small_gemm_acc(P, qh + i0 * Dh, sc.kt.data() + j0, rows, nk, Dh, Dh, T, nk);
          attention_softmax_rows(P, rows, nk, p0, j0, d.window, doc ? doc + i0 : nullptr, scale, lh + i0, nullptr);
          std::fill(dS, dS + rows * nk, 0.0f);
          // This block of dout, contiguous (as in the forward).
          const float* dob = doh + i0 * Dv;
          if (ldo != Dv) {
            // The next block's strided dout and o lines, fetched while this one computes.
            const int64_t n1 = blk + 1 < blocks.size() ? blocks[blk + 1].first + blocks[blk + 1].second : i1;
            for (int64_t i = i1; i < n1; ++i)
              for (int64_t e = 0; e < Dv; e += kLineFloats) {
                __builtin_prefetch(doh + i * ldo + e, 0, 3);
                __builtin_prefetch(oh + i * ldo + e, 0, 3);
              }
            for (int64_t r = 0; r < rows; ++r)
              std::copy(doh + (i0 + r) * ldo, doh + (i0 + r) * ldo + Dv, sc.ob.data() + r * Dv);
            dob = sc.ob.data();
          }
          simd::small_gemm_acc(dS, dob, sc.vt.data() + j0, rows, nk, Dv, Dv, T, nk);  // dP
          for (int64_t r = 0; r < rows; ++r) {
            const float* dor = dob + r * Dv;
            const float* orow = oh + (i0 + r) * ldo;
            float Di = 0.0f;
#pragma omp simd reduction(+ : Di)
            for (int64_t e = 0; e < Dv; ++e) Di += dor[e] * orow[e];
            float* ds = dS + r * nk;
            const float* p = P + r * nk;
#pragma omp simd
            for (int64_t c = 0; c < nk; ++c) ds[c] = p[c] * (ds[c] - Di) * scale;
          }
          std::fill(dqh + i0 * Dh, dqh + i1 * Dh, 0.0f);
          simd::small_gemm_acc(dqh + i0 * Dh, dS, kh + j0 * Dh, rows, Dh, nk, nk, Dh, Dh);
          // dK += dSᵀ Q and dV += Pᵀ dO, dS and P read transposed in place.
          simd::small_gemm_acc<true>(dkh + j0 * Dh, dS, qh + i0 * Dh, nk, Dh, rows, nk, Dh, Dh);
          simd::small_gemm_acc<true>(dvh + j0 * Dv, P, dob, nk, Dv, rows, nk, Dv, Dv);
        }
      }
    }
}

}  // namespace mt
