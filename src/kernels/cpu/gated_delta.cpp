// gated_delta.cpp — chunked gated delta rule on the CPU. Within a chunk (local steps i = 0..n-1,
// gamma_i = g_1 + ... + g_i cumulated inside the chunk, S the entering state), writing
// u_i = b_i (v_i - a_i S_{i-1} k_i) turns the recurrence into S_i = a_i S_{i-1} + u_i k_i^T, so
//   S_i = e^{gamma_i} S + sum_{j<=i} e^{gamma_i - gamma_j} u_j k_j^T
// and the u_i solve a unit lower-triangular system (I + A) U = diag(b) V - diag(b e^gamma) K S^T,
// A_ij = b_i e^{gamma_i - gamma_j} k_i.k_j (j < i). With the UT transform Tm = (I + A)^{-1}:
//   W = Tm diag(b e^gamma) K,  U~ = Tm diag(b) V   (state-free: the WY representation)
//   U = U~ - W S^T
//   O = diag(e^gamma) Q S^T + (M o Q K^T) U,   M_ij = e^{gamma_i - gamma_j} (j <= i, else 0)
//   S <- e^{gamma_n} S + U^T diag(e^{gamma_n - gamma}) K
// (Yang et al. 2024, sections 3-4; the gated form of Yang, Kautz & Hatamizadeh 2025, section 3.3).
// Only differences gamma_i - gamma_j with j <= i are exponentiated, so nothing overflows.
// A document start (GatedDeltaDims::resets) ends a piece of the chunk: the state is zeroed and the
// next piece runs the same equations from there, so no -inf gate enters the cumulated sums.
#include "kernels/cpu/gated_delta.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/simd.h"
#include "kernels/cpu/small_gemm_bf16.h"

namespace mt {
namespace {

struct Scratch {
  std::vector<float> gam, A, Mx, Tm, Kt, Kb, Vb, W, U, St, P;
  std::vector<float> states;  // backward: (C + 1) states of one chunk
  void reserve(int64_t C, int64_t Dk, int64_t Dv) {
    auto grow = [](std::vector<float>& v, int64_t n) {
      if (int64_t(v.size()) < n) v.resize(size_t(n));
    };
    grow(gam, C), grow(A, C * C), grow(Mx, C * C), grow(Tm, C * C), grow(P, C * C), grow(Kt, Dk * C), grow(Kb, C * Dk);
    grow(W, C * Dk), grow(Vb, C * Dv), grow(U, C * Dv), grow(St, Dk * Dv);
  }
};
// Per-thread, grow-only (docs/kernels.md).
thread_local Scratch tls;

// The decay a_t = e^{g_t}, or 0 where a document starts.
float decay_at(const GatedDeltaDims& d, int64_t b, int64_t t, float g) { return d.resets(b, t) ? 0.0f : std::exp(g); }

// One recurrent step with decay a on state S (Dv, Dk); p (Dv) is scratch. o (Dv) may be null.
void step(float* S, float* p, float* o, const float* q, const float* k, const float* v, float a, float beta, int64_t Dk,
          int64_t Dv) {
  for (int64_t r = 0; r < Dv; ++r) {
    const float* s = S + r * Dk;
    float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
    for (int64_t e = 0; e < Dk; ++e) acc += s[e] * k[e];
    p[r] = acc;
  }
  for (int64_t r = 0; r < Dv; ++r) {
    float* s = S + r * Dk;
    const float u = beta * (v[r] - a * p[r]);
#pragma omp simd
    for (int64_t e = 0; e < Dk; ++e) s[e] = a * s[e] + u * k[e];
  }
  if (!o) return;
  for (int64_t r = 0; r < Dv; ++r) {
    const float* s = S + r * Dk;
    float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
    for (int64_t e = 0; e < Dk; ++e) acc += s[e] * q[e];
    o[r] = acc;
  }
}

// One chunk of n <= C steps for one head: o rows written, S (Dv, Dk) advanced.
void chunk_forward(float* o, float* S, const float* q, const float* k, const float* v, const float* g,
                   const float* beta, int64_t n, int64_t Dk, int64_t Dv, bool bf16, Scratch& sc) {
  float* gam = sc.gam.data();
  float acc = 0.0f;
  for (int64_t i = 0; i < n; ++i) gam[i] = acc += g[i];
  // A (strictly lower) from K K^T; P = M o Q K^T.
  simd::transpose(sc.Kt.data(), k, n, Dk, Dk, n);
  float* A = sc.A.data();
  float* P = sc.P.data();
  float* Mx = sc.Mx.data();
  std::fill(A, A + n * n, 0.0f);
  std::fill(P, P + n * n, 0.0f);
  simd::small_gemm_acc_in(bf16, A, k, sc.Kt.data(), n, n, Dk, Dk, n, n, simd::kLowerC);  // only j <= i is kept below
  simd::small_gemm_acc_in(bf16, P, q, sc.Kt.data(), n, n, Dk, Dk, n, n, simd::kLowerC);
  gated_delta_decays(Mx, gam, n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const float m = Mx[i * n + j];
      A[i * n + j] = j < i ? beta[i] * m * A[i * n + j] : 0.0f;
      P[i * n + j] *= m;
    }
  float* Tm = sc.Tm.data();
  gated_delta_ut_inverse(Tm, A, n);
  // W = -Tm diag(b e^gamma) K (negated so U = U~ + W S^T is one accumulation), U~ = Tm diag(b) V.
  float* Kb = sc.Kb.data();
  float* Vb = sc.Vb.data();
  for (int64_t i = 0; i < n; ++i) {
    const float sk = -beta[i] * std::exp(gam[i]);
    for (int64_t e = 0; e < Dk; ++e) Kb[i * Dk + e] = sk * k[i * Dk + e];
    for (int64_t e = 0; e < Dv; ++e) Vb[i * Dv + e] = beta[i] * v[i * Dv + e];
  }
  float* W = sc.W.data();
  float* U = sc.U.data();
  std::fill(W, W + n * Dk, 0.0f);
  std::fill(U, U + n * Dv, 0.0f);
  simd::small_gemm_acc_in(bf16, W, Tm, Kb, n, Dk, n, n, Dk, Dk, simd::kLowerA);  // Tm is lower triangular
  simd::small_gemm_acc_in(bf16, U, Tm, Vb, n, Dv, n, n, Dv, Dv, simd::kLowerA);
  float* St = sc.St.data();
  simd::transpose(St, S, Dv, Dk, Dk, Dv);  // S^T (Dk, Dv)
  simd::small_gemm_acc_in(bf16, U, W, St, n, Dv, Dk, Dk, Dv, Dv);
  // O = diag(e^gamma) Q S^T + P U.
  std::fill(o, o + n * Dv, 0.0f);
  simd::small_gemm_acc_in(bf16, o, q, St, n, Dv, Dk, Dk, Dv, Dv);
  for (int64_t i = 0; i < n; ++i) {
    const float s = std::exp(gam[i]);
    for (int64_t e = 0; e < Dv; ++e) o[i * Dv + e] *= s;
  }
  simd::small_gemm_acc_in(bf16, o, P, U, n, Dv, n, n, Dv, Dv, simd::kLowerA);  // P = M o Q K^T is lower triangular
  // S <- e^{gamma_n} S + U^T diag(e^{gamma_n - gamma}) K.
  const float last = gam[n - 1];
  for (int64_t i = 0; i < n; ++i) {
    const float s = std::exp(last - gam[i]);
    for (int64_t e = 0; e < Dk; ++e) Kb[i * Dk + e] = s * k[i * Dk + e];
  }
  const float decay = std::exp(last);
  for (int64_t e = 0; e < Dv * Dk; ++e) S[e] *= decay;
  simd::small_gemm_acc_in<true>(bf16, S, U, Kb, Dv, Dk, n, Dv, Dk, Dk);  // U^T Kb, U read in place
}

}  // namespace

void gated_delta_ut_inverse(float* Tm, const float* A, int64_t n) {
  // Row i = e_i - sum_{j<i} A_ij Tm_j, in j order; Tm_jc = 0 for c > j, so a block of columns
  // from c0 needs rows j >= c0 only, and its sums stay in registers.
  using namespace simd;
  constexpr int kVecs = 4;
  constexpr int64_t kBlock = kVecs * kLanes;
  std::fill(Tm, Tm + n * n, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    float* ti = Tm + i * n;
    const float* ai = A + i * n;
    for (int64_t c0 = 0; c0 < i; c0 += kBlock) {
      Mask m[kVecs];
      Vec acc[kVecs];
      for (int v = 0; v < kVecs; ++v) {
        const int64_t left = i - (c0 + v * kLanes);
        m[v] = tail_mask(left > 0 ? left : 0);
        acc[v] = zero();
      }
      for (int64_t j = c0; j < i; ++j) {
        const Vec a = set1(ai[j]);
        const float* tj = Tm + j * n + c0;
        for (int v = 0; v < kVecs; ++v) acc[v] = fnmadd(a, load(m[v], tj + v * kLanes), acc[v]);
      }
      for (int v = 0; v < kVecs; ++v) store(ti + c0 + v * kLanes, m[v], acc[v]);
    }
    ti[i] = 1.0f;
  }
}

void gated_delta_decays(float* Mx, const float* gam, int64_t n) {
  using namespace simd;
  for (int64_t i = 0; i < n; ++i) {
    float* row = Mx + i * n;
    const Vec gi = set1(gam[i]);
    for (int64_t j = 0; j <= i; j += kLanes) {
      const Mask m = tail_mask(i + 1 - j);
      store(row + j, m, simd::exp(sub(gi, load(m, gam + j))));
    }
    std::fill(row + i + 1, row + n, 0.0f);
  }
}

bool gated_delta_bf16_products() { return simd::bf16_dot_available(); }

int64_t gated_delta_chunks(const GatedDeltaDims& d) { return (d.T + d.C - 1) / d.C; }

double gated_delta_flops_per_token(int64_t Dk, int64_t Dv, int64_t C) {
  // Every C x C factor is triangular: a row of it holds (C + 1) / 2 entries on average.
  const double c = double(C + 1) / 2.0, k = double(Dk), v = double(Dv);
  return 4.0 * c * k + 2.0 * c * (k + v) + 2.0 * c * v + 6.0 * k * v;
}

void gated_delta_forward(float* o, float* states, const float* q, const float* k, const float* v,
                         const float* g, const float* beta, const GatedDeltaDims& d) {
  const int64_t NC = gated_delta_chunks(d), SS = d.Dv * d.Dk;
  const bool bf16 = d.bf16_products && gated_delta_bf16_products();
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t bh = 0; bh < d.B * d.H; ++bh) {
    Scratch& sc = tls;
    sc.reserve(d.C, d.Dk, d.Dv);
    float* st = states + bh * NC * SS;
    std::vector<float>& S = sc.states;  // the running state (forward uses the first SS floats)
    if (int64_t(S.size()) < SS) S.resize(size_t(SS));
    std::fill(S.begin(), S.begin() + SS, 0.0f);
    const int64_t b = bh / d.H;
    for (int64_t c = 0; c < NC; ++c) {
      const int64_t t0 = c * d.C, t1 = std::min(d.T, t0 + d.C);
      if (t1 < d.T) {  // the next chunk's rows, a few pages on
        const int64_t r1 = bh * d.T + t1, n1 = std::min(d.C, d.T - t1);
        simd::prefetch_l2(q + r1 * d.Dk, n1 * d.Dk), simd::prefetch_l2(k + r1 * d.Dk, n1 * d.Dk);
        simd::prefetch_l2(v + r1 * d.Dv, n1 * d.Dv), simd::prefetch_l2_write(o + r1 * d.Dv, n1 * d.Dv);
        simd::prefetch_l2_write(st + (c + 1) * SS, SS);
      }
      std::copy(S.begin(), S.begin() + SS, st + c * SS);
      for (int64_t p0 = t0, p1; p0 < t1; p0 = p1) {  // pieces of the chunk between document starts
        for (p1 = p0 + 1; p1 < t1 && !d.resets(b, p1); ++p1) {
        }
        if (d.resets(b, p0)) std::fill(S.begin(), S.begin() + SS, 0.0f);
        const int64_t row = bh * d.T + p0;
        chunk_forward(o + row * d.Dv, S.data(), q + row * d.Dk, k + row * d.Dk, v + row * d.Dv, g + row, beta + row,
                      p1 - p0, d.Dk, d.Dv, bf16, sc);
      }
    }
  }
}

void gated_delta_recurrent(float* o, float* state, const float* q, const float* k, const float* v,
                           const float* g, const float* beta, const GatedDeltaDims& d) {
  const int64_t SS = d.Dv * d.Dk;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t bh = 0; bh < d.B * d.H; ++bh) {
    std::vector<float> p(size_t{0} + size_t(d.Dv));
    float* S = state + bh * SS;
    for (int64_t t = 0; t < d.T; ++t) {
      const int64_t row = bh * d.T + t;
      step(S, p.data(), o + row * d.Dv, q + row * d.Dk, k + row * d.Dk, v + row * d.Dv,
           decay_at(d, bh / d.H, t, g[row]), beta[row], d.Dk, d.Dv);
    }
  }
}

// Reverse-time step with G = dL/dS_t (o_t's gradient added first), a = e^g, p = S_{t-1} k,
// u = b (v - a p), S_t = a S_{t-1} + u k^T:
//   du = G k,  dk = G^T u + S_{t-1}^T dp,  dp = -a b du,  dv = b du,  db = du.(v - a p),
//   da = <G, S_{t-1}> - b du.p,  dg = a da,  dS_{t-1} = a G + dp k^T.
// At a document start a = 0: dg = 0 and nothing flows back into the previous document.
void gated_delta_backward_sequential(float* dq, float* dk, float* dv, float* dg, float* dbeta, const float* dout,
                                     const float* q, const float* k, const float* v, const float* g, const float* beta,
                                     const float* states, const GatedDeltaDims& d) {
  const int64_t NC = gated_delta_chunks(d), SS = d.Dv * d.Dk, Dk = d.Dk, Dv = d.Dv;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t bh = 0; bh < d.B * d.H; ++bh) {
    Scratch& sc = tls;
    sc.reserve(d.C, Dk, Dv);
    if (int64_t(sc.states.size()) < (d.C + 1) * SS) sc.states.resize(size_t((d.C + 1) * SS));
    std::vector<float> G(size_t(SS), 0.0f), p(size_t{0} + size_t(Dv)), du(p), dp(p);
    for (int64_t c = NC - 1; c >= 0; --c) {
      const int64_t t0 = c * d.C, n = std::min(d.C, d.T - t0);
      float* Sb = sc.states.data();  // Sb + i SS = state after local step i - 1
      std::copy(states + (bh * NC + c) * SS, states + (bh * NC + c + 1) * SS, Sb);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t row = bh * d.T + t0 + i;
        std::copy(Sb + i * SS, Sb + (i + 1) * SS, Sb + (i + 1) * SS);
        step(Sb + (i + 1) * SS, p.data(), nullptr, nullptr, k + row * Dk, v + row * Dv,
             decay_at(d, bh / d.H, t0 + i, g[row]), beta[row], Dk, Dv);
      }
      for (int64_t i = n - 1; i >= 0; --i) {
        const int64_t row = bh * d.T + t0 + i;
        const float* St = Sb + (i + 1) * SS;
        const float* Sp = Sb + i * SS;
        const float *qt = q + row * Dk, *kt = k + row * Dk, *vt = v + row * Dv, *dot = dout + row * Dv;
        float *dqt = dq + row * Dk, *dkt = dk + row * Dk, *dvt = dv + row * Dv;
        const float a = decay_at(d, bh / d.H, t0 + i, g[row]), b = beta[row];
        // o_t = S_t q_t: dq = S_t^T do, G += do q^T.
        std::fill(dqt, dqt + Dk, 0.0f);
        for (int64_t r = 0; r < Dv; ++r) {
          const float* s = St + r * Dk;
          float* gr = G.data() + r * Dk;
          const float dr = dot[r];
#pragma omp simd
          for (int64_t e = 0; e < Dk; ++e) {
            dqt[e] += s[e] * dr;
            gr[e] += dr * qt[e];
          }
        }
        // p = S_{t-1} k, du = G k, <G, S_{t-1}>.
        double dalpha = 0.0;
        for (int64_t r = 0; r < Dv; ++r) {
          const float* s = Sp + r * Dk;
          const float* gr = G.data() + r * Dk;
          float ps = 0.0f, gs = 0.0f, gsp = 0.0f;
#pragma omp simd reduction(+ : ps, gs, gsp)
          for (int64_t e = 0; e < Dk; ++e) {
            ps += s[e] * kt[e];
            gs += gr[e] * kt[e];
            gsp += gr[e] * s[e];
          }
          p[r] = ps;
          du[r] = gs;
          dalpha += gsp;
        }
        float db = 0.0f;
        for (int64_t r = 0; r < Dv; ++r) {
          const float u = b * (vt[r] - a * p[r]);
          db += du[r] * (vt[r] - a * p[r]);
          dalpha -= double(b * du[r] * p[r]);
          dvt[r] = b * du[r];
          dp[r] = -a * b * du[r];
          p[r] = u;  // p now holds u
        }
        dbeta[row] = db;
        dg[row] = float(double(a) * dalpha);
        // dk = G^T u + S_{t-1}^T dp; then G <- a G + dp k^T.
        std::fill(dkt, dkt + Dk, 0.0f);
        for (int64_t r = 0; r < Dv; ++r) {
          const float* s = Sp + r * Dk;
          float* gr = G.data() + r * Dk;
          const float ur = p[r], dpr = dp[r];
#pragma omp simd
          for (int64_t e = 0; e < Dk; ++e) {
            dkt[e] += gr[e] * ur + s[e] * dpr;
            gr[e] = a * gr[e] + dpr * kt[e];
          }
        }
      }
    }
  }
}

}  // namespace mt
