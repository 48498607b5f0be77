// attention.cpp — blocked attention on the CPU. Per (batch, head) and block of
// kQB queries, scores come from an outer-product loop over a transposed key
// block (vectorised over keys), and outputs from broadcast-FMA over value rows
// (vectorised over Dh). Scratch is per thread and grows only on first use.
#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace mt {
namespace {

constexpr int64_t kQB = 16;  // queries per block

struct Scratch {
  std::vector<float> kt, s, dp, vt;
  void reserve(int64_t Dh, int64_t T) {
    if (int64_t(kt.size()) < Dh * T) { kt.resize(Dh * T); vt.resize(Dh * T); }
    if (int64_t(s.size()) < kQB * T) { s.resize(kQB * T); dp.resize(kQB * T); }
  }
};
thread_local Scratch tls;

inline int64_t key_begin(int64_t i, int64_t window) { return window > 0 ? std::max<int64_t>(0, i - window + 1) : 0; }

// Kt[d][j - j0] = K[j][d] for j in [j0, j1).
void transpose_block(float* kt, const float* k, int64_t j0, int64_t j1, int64_t Dh, int64_t ld) {
  for (int64_t j = j0; j < j1; ++j)
    for (int64_t d = 0; d < Dh; ++d) kt[d * ld + (j - j0)] = k[j * Dh + d];
}

// S[r][c] = scale * q[i0 + r] . k[j0 + c]; entries outside the causal/window
// band are -inf. Returns nothing; S has leading dimension ld.
void scores(float* S, const float* q, const float* kt, int64_t i0, int64_t i1, int64_t j0, int64_t j1,
            int64_t Dh, int64_t ld, float scale, int64_t window) {
  const int64_t nk = j1 - j0;
  for (int64_t i = i0; i < i1; ++i) {
    float* srow = S + (i - i0) * ld;
    const float* qi = q + i * Dh;
#pragma omp simd
    for (int64_t c = 0; c < nk; ++c) srow[c] = 0.0f;
    for (int64_t d = 0; d < Dh; ++d) {
      const float qd = qi[d] * scale;
      const float* ktd = kt + d * ld;
#pragma omp simd
      for (int64_t c = 0; c < nk; ++c) srow[c] += qd * ktd[c];
    }
    const int64_t lo = key_begin(i, window);
    for (int64_t c = 0; c < nk; ++c) {
      int64_t j = j0 + c;
      if (j > i || j < lo) srow[c] = -std::numeric_limits<float>::infinity();
    }
  }
}

}  // namespace

double attention_mean_keys(int64_t T, int64_t window) {
  double total = 0.0;
  for (int64_t i = 0; i < T; ++i) total += double(i - key_begin(i, window) + 1);
  return total / double(T);
}

void attention_forward(float* o, float* lse, const float* q, const float* k, const float* v,
                       const AttentionDims& d) {
  const int64_t Dh = d.Dh, T = d.T, group = d.H / d.Hkv;
  const float scale = 1.0f / std::sqrt(float(Dh));
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t h = 0; h < d.H; ++h) {
      Scratch& sc = tls;
      sc.reserve(Dh, T);
      const int64_t kvh = h / group;
      const float* qh = q + (b * d.H + h) * T * Dh;
      const float* kh = k + (b * d.Hkv + kvh) * T * Dh;
      const float* vh = v + (b * d.Hkv + kvh) * T * Dh;
      float* oh = o + (b * d.H + h) * T * Dh;
      float* lh = lse + (b * d.H + h) * T;
      for (int64_t i0 = 0; i0 < T; i0 += kQB) {
        const int64_t i1 = std::min(T, i0 + kQB);
        const int64_t j0 = key_begin(i0, d.window), j1 = i1, ld = j1 - j0;
        transpose_block(sc.kt.data(), kh, j0, j1, Dh, ld);
        scores(sc.s.data(), qh, sc.kt.data(), i0, i1, j0, j1, Dh, ld, scale, d.window);
        for (int64_t i = i0; i < i1; ++i) {
          float* srow = sc.s.data() + (i - i0) * ld;
          float m = -std::numeric_limits<float>::infinity();
          for (int64_t c = 0; c < ld; ++c) m = std::max(m, srow[c]);
          float l = 0.0f;
          for (int64_t c = 0; c < ld; ++c) {
            srow[c] = std::exp(srow[c] - m);
            l += srow[c];
          }
          const float inv = 1.0f / l;
          float* oi = oh + i * Dh;
#pragma omp simd
          for (int64_t e = 0; e < Dh; ++e) oi[e] = 0.0f;
          const int64_t lo = key_begin(i, d.window) - j0, hi = i - j0 + 1;
          for (int64_t c = lo; c < hi; ++c) {
            const float p = srow[c] * inv;
            const float* vj = vh + (j0 + c) * Dh;
#pragma omp simd
            for (int64_t e = 0; e < Dh; ++e) oi[e] += p * vj[e];
          }
          lh[i] = m + std::log(l);
        }
      }
    }
}

void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q,
                        const float* k, const float* v, const float* o, const float* lse,
                        const AttentionDims& d) {
  const int64_t Dh = d.Dh, T = d.T, group = d.H / d.Hkv;
  const float scale = 1.0f / std::sqrt(float(Dh));
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t kvh = 0; kvh < d.Hkv; ++kvh) {
      Scratch& sc = tls;
      sc.reserve(Dh, T);
      const float* kh = k + (b * d.Hkv + kvh) * T * Dh;
      const float* vh = v + (b * d.Hkv + kvh) * T * Dh;
      float* dkh = dk + (b * d.Hkv + kvh) * T * Dh;
      float* dvh = dv + (b * d.Hkv + kvh) * T * Dh;
      std::fill(dkh, dkh + T * Dh, 0.0f);
      std::fill(dvh, dvh + T * Dh, 0.0f);
      for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h) {
        const float* qh = q + (b * d.H + h) * T * Dh;
        const float* oh = o + (b * d.H + h) * T * Dh;
        const float* doh = dout + (b * d.H + h) * T * Dh;
        const float* lh = lse + (b * d.H + h) * T;
        float* dqh = dq + (b * d.H + h) * T * Dh;
        for (int64_t i0 = 0; i0 < T; i0 += kQB) {
          const int64_t i1 = std::min(T, i0 + kQB);
          const int64_t j0 = key_begin(i0, d.window), j1 = i1, ld = j1 - j0;
          transpose_block(sc.kt.data(), kh, j0, j1, Dh, ld);
          transpose_block(sc.vt.data(), vh, j0, j1, Dh, ld);
          scores(sc.s.data(), qh, sc.kt.data(), i0, i1, j0, j1, Dh, ld, scale, d.window);
          for (int64_t i = i0; i < i1; ++i) {
            float* p = sc.s.data() + (i - i0) * ld;
            float* dp = sc.dp.data() + (i - i0) * ld;
            const float* doi = doh + i * Dh;
            const float* oi = oh + i * Dh;
            const float li = lh[i];
            const int64_t lo = key_begin(i, d.window) - j0, hi = i - j0 + 1;
            for (int64_t c = lo; c < hi; ++c) p[c] = std::exp(p[c] - li);
            // dP[c] = dO_i . V_j  (outer-product form over transposed V)
            for (int64_t c = lo; c < hi; ++c) dp[c] = 0.0f;
            for (int64_t e = 0; e < Dh; ++e) {
              const float de = doi[e];
              const float* vte = sc.vt.data() + e * ld;
#pragma omp simd
              for (int64_t c = lo; c < hi; ++c) dp[c] += de * vte[c];
            }
            float Di = 0.0f;
#pragma omp simd reduction(+ : Di)
            for (int64_t e = 0; e < Dh; ++e) Di += doi[e] * oi[e];
            // dS = P (dP - D); reuse dp for dS * scale.
#pragma omp simd
            for (int64_t c = lo; c < hi; ++c) dp[c] = p[c] * (dp[c] - Di) * scale;
            float* dqi = dqh + i * Dh;
            const float* qi = qh + i * Dh;
#pragma omp simd
            for (int64_t e = 0; e < Dh; ++e) dqi[e] = 0.0f;
            for (int64_t c = lo; c < hi; ++c) {
              const int64_t j = j0 + c;
              const float ds = dp[c], pc = p[c];
              const float* kj = kh + j * Dh;
              float* dkj = dkh + j * Dh;
              float* dvj = dvh + j * Dh;
#pragma omp simd
              for (int64_t e = 0; e < Dh; ++e) {
                dqi[e] += ds * kj[e];
                dkj[e] += ds * qi[e];
                dvj[e] += pc * doi[e];
              }
            }
          }
        }
      }
    }
}

}  // namespace mt
