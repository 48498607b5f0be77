// gated_delta_backward.cpp — the chunked backward of the gated delta rule (gated_delta.h): the
// chunked forward (gated_delta.cpp, whose notation this file keeps) differentiated in matrix form,
// chunk by chunk from the last, carrying dS = dL/dS backwards across chunk boundaries. Each chunk
// recomputes its UT quantities (Tm, W, U) from the saved chunk-entry state, then every gradient of
// the intra-chunk products is a C x C or C x D matrix product, as in flash-linear-attention's
// chunk_gated_delta_rule backward (Yang et al. 2024, section 4; Yang, Kautz & Hatamizadeh 2025).
// Against the step-by-step reverse pass (gated_delta_backward_sequential, the tests' reference) the
// FLOPs are of the same order but run as register-blocked small GEMMs instead of streaming a
// Dv x Dk state per step: 1.55x faster on one moe-512-hybrid layer (docs/performance.md).
//
// Per piece of n steps (a chunk, or the part of one between document starts), with E_i = e^{gamma_i},
// Mx_ij = e^{gamma_i - gamma_j} (j <= i), Kd = diag(e^{gamma_n - gamma}) K, Wn = -W, and G = dL/dS_end:
//   S_end = E_n S + U^T Kd:        dS = E_n G,  dU = Kd G^T,  dKd = U G
//   O = diag(E) Q S^T + P U:       dQ = diag(E) dO S,  dS += dO^T diag(E) Q,  dP = dO U^T,  dU += P^T dO
//   P = Mx o Q K^T:                dQ += (Mx o dP) K,  dK += (Mx o dP)^T Q
//   U = Tm Vb + Wn S^T:            dWn = dU S,  dS += dU^T Wn,  dTm = dWn Kbn^T + dU Vb^T,
//                                  dKbn = Tm^T dWn,  dVb = Tm^T dU
//   Tm = (I + A)^{-1}:             dA = -Tm^T dTm Tm^T (strictly lower part)
//   A_ij = b_i Mx_ij k_i.k_j:      dK += B2 K + B2^T K, B2_ij = b_i Mx_ij dA_ij
// and every exponent's gradient lands on gamma (each Mx_ij = e^{gamma_i - gamma_j} gives +/- dMx_ij Mx_ij),
// turned into dg by a reverse cumulative sum within the piece.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/gated_delta.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/small_gemm_bf16.h"

namespace mt {
namespace {

struct BackScratch {
  std::vector<float> gam, dgam, colsum;                        // (C)
  std::vector<float> Mx, KK, A, Tm, TmT, P, dP, X, dTm;        // (C, C)
  std::vector<float> Kt, Kbn, Kbnt, Wn, Kd, dKd, dWn, dKbn;    // (C, Dk) or (Dk, C)
  std::vector<float> Vb, Vbt, U, Ut, dU, dOE, dVb;             // (C, Dv) or (Dv, C)
  std::vector<float> St, Gt, G, dS, zero;                      // (Dv, Dk) or (Dk, Dv)
  void reserve(int64_t C, int64_t Dk, int64_t Dv) {
    auto grow = [](int64_t n, std::initializer_list<std::vector<float>*> vs) {
      for (auto* v : vs)
        if (int64_t(v->size()) < n) v->resize(size_t(n));
    };
    grow(C, {&gam, &dgam, &colsum});
    grow(C * C, {&Mx, &KK, &A, &Tm, &TmT, &P, &dP, &X, &dTm});
    grow(C * Dk, {&Kt, &Kbn, &Kbnt, &Wn, &Kd, &dKd, &dWn, &dKbn});
    grow(C * Dv, {&Vb, &Vbt, &U, &Ut, &dU, &dOE, &dVb});
    grow(Dk * Dv, {&St, &Gt, &G, &dS, &zero});
  }
};
// Per-thread, grow-only (docs/kernels.md).
thread_local BackScratch tls_back;

// The piece's products, in fp32 or (bf16) with bf16 operands (GatedDeltaDims::bf16_products).
struct Products {
  bool bf16;
  // C (M, N) = A (M, K) B (K, N), or += with mm_acc; all contiguous. `tri` names the zeros of a
  // triangular factor to skip, or that only C's lower triangle is read afterwards (simd.h).
  void mm_acc(float* C, const float* A, const float* B, int64_t M, int64_t N, int64_t K,
              unsigned tri = simd::kFull) const {
    simd::small_gemm_acc_in(bf16, C, A, B, M, N, K, K, N, N, tri);
  }
  void mm(float* C, const float* A, const float* B, int64_t M, int64_t N, int64_t K, unsigned tri = simd::kFull) const {
    std::fill(C, C + M * N, 0.0f);
    mm_acc(C, A, B, M, N, K, tri);
  }
  // C (M, N) += At^T B with At (K, M) read in place: the same sums as mm_acc on At's transpose.
  void mm_acc_at(float* C, const float* At, const float* B, int64_t M, int64_t N, int64_t K,
                 unsigned tri = simd::kFull) const {
    simd::small_gemm_acc_in<true>(bf16, C, At, B, M, N, K, M, N, N, tri);
  }
};
constexpr unsigned kLowerA = simd::kLowerA, kUpperA = simd::kUpperA, kLowerC = simd::kLowerC;
// out (C, R) = in (R, C)^T.
void tr(float* out, const float* in, int64_t R, int64_t C) { simd::transpose(out, in, R, C, C, R); }

float dot(const float* x, const float* y, int64_t n) {
  float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
  for (int64_t e = 0; e < n; ++e) acc += x[e] * y[e];
  return acc;
}

// One piece of n steps for one head. S (Dv, Dk) is the state entering the piece; sc.G holds
// dL/dS at the piece's end on entry and dL/dS at its start on exit. Rows of dq, dk, dv, dg, dbeta
// written.
void piece_backward(float* dq, float* dk, float* dv, float* dg, float* dbeta, const float* dout, const float* S,
                    const float* q, const float* k, const float* v, const float* g, const float* beta, int64_t n,
                    int64_t Dk, int64_t Dv, const Products& pr, BackScratch& sc) {
  float *gam = sc.gam.data(), *dgam = sc.dgam.data();
  float acc = 0.0f;
  for (int64_t i = 0; i < n; ++i) gam[i] = acc += g[i], dgam[i] = 0.0f;
  const float last = gam[n - 1], En = std::exp(last);

  // Recompute the forward's chunk quantities: Mx, K K^T, A, P, Tm, Wn, U.
  float *Mx = sc.Mx.data(), *KK = sc.KK.data(), *A = sc.A.data(), *P = sc.P.data();
  gated_delta_decays(Mx, gam, n);
  tr(sc.Kt.data(), k, n, Dk);
  pr.mm(KK, k, sc.Kt.data(), n, n, Dk, kLowerC);  // both read at j <= i only
  pr.mm(P, q, sc.Kt.data(), n, n, Dk, kLowerC);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      A[i * n + j] = j < i ? beta[i] * Mx[i * n + j] * KK[i * n + j] : 0.0f;
      P[i * n + j] *= Mx[i * n + j];
    }
  float* Tm = sc.Tm.data();
  gated_delta_ut_inverse(Tm, A, n);  // as in the forward
  float *TmT = sc.TmT.data(), *Kbn = sc.Kbn.data(), *Vb = sc.Vb.data(), *Kd = sc.Kd.data();
  tr(TmT, Tm, n, n);
  for (int64_t i = 0; i < n; ++i) {
    const float sk = -beta[i] * std::exp(gam[i]), sd = std::exp(last - gam[i]);
    for (int64_t e = 0; e < Dk; ++e) Kbn[i * Dk + e] = sk * k[i * Dk + e], Kd[i * Dk + e] = sd * k[i * Dk + e];
    for (int64_t e = 0; e < Dv; ++e) Vb[i * Dv + e] = beta[i] * v[i * Dv + e];
  }
  float *Wn = sc.Wn.data(), *U = sc.U.data(), *St = sc.St.data();
  pr.mm(Wn, Tm, Kbn, n, Dk, n, kLowerA);  // Tm lower triangular, TmT upper
  pr.mm(U, Tm, Vb, n, Dv, n, kLowerA);
  tr(St, S, Dv, Dk);
  pr.mm_acc(U, Wn, St, n, Dv, Dk);

  // S_end = E_n S + U^T Kd.
  float *G = sc.G.data(), *Gt = sc.Gt.data(), *dS = sc.dS.data(), *dU = sc.dU.data(), *dKd = sc.dKd.data();
  tr(Gt, G, Dv, Dk);
  pr.mm(dU, Kd, Gt, n, Dv, Dk);
  pr.mm(dKd, U, G, n, Dk, Dv);
  for (int64_t i = 0; i < n; ++i) {
    const float sd = std::exp(last - gam[i]);
    const float s = dot(Kd + i * Dk, dKd + i * Dk, Dk);
    dgam[i] -= s, dgam[n - 1] += s;
    for (int64_t e = 0; e < Dk; ++e) dk[i * Dk + e] = sd * dKd[i * Dk + e];
  }
  dgam[n - 1] += En * dot(G, S, Dv * Dk);
  for (int64_t e = 0; e < Dv * Dk; ++e) dS[e] = En * G[e];

  // O = diag(E) Q S^T + P U.
  float *dOE = sc.dOE.data(), *dP = sc.dP.data(), *Ut = sc.Ut.data(), *X = sc.X.data();
  for (int64_t i = 0; i < n; ++i) {
    const float s = std::exp(gam[i]);
    for (int64_t e = 0; e < Dv; ++e) dOE[i * Dv + e] = s * dout[i * Dv + e];
  }
  pr.mm(dq, dOE, S, n, Dk, Dv);
  for (int64_t i = 0; i < n; ++i) dgam[i] += dot(q + i * Dk, dq + i * Dk, Dk);
  pr.mm_acc_at(dS, dOE, q, Dv, Dk, n);
  tr(Ut, U, n, Dv);
  pr.mm(dP, dout, Ut, n, n, Dv, kLowerC);        // masked by P and Mx below: its upper part stays zero
  pr.mm_acc_at(dU, P, dout, n, Dv, n, kUpperA);  // P^T, upper triangular
  // P = Mx o Q K^T: z_ij = dP_ij P_ij lands on gamma_i and (negated) on gamma_j; dP becomes Mx o dP
  // in place, zero above the diagonal (the products below read whole strips).
  float* colsum = sc.colsum.data();
  std::fill(colsum, colsum + n, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    using namespace simd;
    float *dpi = dP + i * n, *mi = Mx + i * n;
    const float* pi = P + i * n;
    Vec rs = zero();
    for (int64_t j = 0; j <= i; j += kLanes) {
      const Mask m = tail_mask(i + 1 - j);
      const Vec d = load(m, dpi + j), z = mul(d, load(m, pi + j));
      rs = add(rs, z);
      store(colsum + j, m, add(load(m, colsum + j), z));
      store(dpi + j, m, mul(d, load(m, mi + j)));
    }
    std::fill(dpi + i + 1, dpi + n, 0.0f);
    dgam[i] += reduce_add(rs);
  }
  for (int64_t j = 0; j < n; ++j) dgam[j] -= colsum[j];
  pr.mm_acc(dq, dP, k, n, Dk, n, kLowerA);
  pr.mm_acc_at(dk, dP, q, n, Dk, n, kUpperA);

  // U = Tm Vb + Wn S^T.
  float *dWn = sc.dWn.data(), *dTm = sc.dTm.data(), *dKbn = sc.dKbn.data(), *dVb = sc.dVb.data();
  pr.mm(dWn, dU, S, n, Dk, Dv);
  pr.mm_acc_at(dS, dU, Wn, Dv, Dk, n);
  tr(sc.Kbnt.data(), Kbn, n, Dk);
  tr(sc.Vbt.data(), Vb, n, Dv);
  // Only dTm's strictly lower part reaches dA's (the part kept): Tm is lower triangular.
  pr.mm(dTm, dWn, sc.Kbnt.data(), n, n, Dk, kLowerC);
  pr.mm_acc(dTm, dU, sc.Vbt.data(), n, n, Dv, kLowerC);
  pr.mm(dKbn, TmT, dWn, n, Dk, n, kUpperA);
  pr.mm(dVb, TmT, dU, n, Dv, n, kUpperA);
  for (int64_t i = 0; i < n; ++i) {
    const float e = std::exp(gam[i]), sk = -beta[i] * e;
    const float kd = dot(k + i * Dk, dKbn + i * Dk, Dk);
    for (int64_t c = 0; c < Dv; ++c) dv[i * Dv + c] = beta[i] * dVb[i * Dv + c];
    for (int64_t c = 0; c < Dk; ++c) dk[i * Dk + c] += sk * dKbn[i * Dk + c];
    dbeta[i] = dot(v + i * Dv, dVb + i * Dv, Dv) - e * kd;
    dgam[i] += sk * kd;
  }

  // Tm = (I + A)^{-1}: dA = -Tm^T dTm Tm^T, kept in dTm's place (strictly lower part used).
  pr.mm(X, TmT, dTm, n, n, n, kUpperA | kLowerC);
  float* dA = dTm;
  pr.mm(dA, X, TmT, n, n, n, kLowerA | kLowerC);  // X's lower triangle meets TmT's nonzeros at j < i
  // Per row i, over j < i: a = -dA_ij; z = a A_ij to gamma_i and (negated) gamma_j; a Mx_ij KK_ij
  // to beta_i; dA_ij becomes B2_ij = b_i Mx_ij a, zero on and above the diagonal.
  std::fill(colsum, colsum + n, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    using namespace simd;
    float* ai = dA + i * n;
    const float *Ai = A + i * n, *mi = Mx + i * n, *kki = KK + i * n;
    const Vec bi = set1(beta[i]);
    Vec rz = zero(), rb = zero();
    for (int64_t j = 0; j < i; j += kLanes) {
      const Mask m = tail_mask(i - j);
      const Vec a = sub(zero(), load(m, ai + j)), mx = load(m, mi + j), z = mul(a, load(m, Ai + j));
      rz = add(rz, z);
      store(colsum + j, m, add(load(m, colsum + j), z));
      rb = fmadd(mul(a, mx), load(m, kki + j), rb);
      store(ai + j, m, mul(mul(a, bi), mx));
    }
    std::fill(ai + i, ai + n, 0.0f);
    dgam[i] += reduce_add(rz);
    dbeta[i] += reduce_add(rb);
  }
  for (int64_t j = 0; j < n; ++j) dgam[j] -= colsum[j];
  pr.mm_acc(dk, dA, k, n, Dk, n, kLowerA);
  pr.mm_acc_at(dk, dA, k, n, Dk, n, kUpperA);

  // g_i enters every gamma_j with j >= i.
  acc = 0.0f;
  for (int64_t i = n - 1; i >= 0; --i) dg[i] = acc += dgam[i];
  std::copy(dS, dS + Dv * Dk, G);
}

}  // namespace

void gated_delta_backward(float* dq, float* dk, float* dv, float* dg, float* dbeta, const float* dout, const float* q,
                          const float* k, const float* v, const float* g, const float* beta, const float* states,
                          const GatedDeltaDims& d) {
  const int64_t NC = gated_delta_chunks(d), SS = d.Dv * d.Dk, Dk = d.Dk, Dv = d.Dv;
  const Products pr{d.bf16_products && gated_delta_bf16_products()};
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t bh = 0; bh < d.B * d.H; ++bh) {
    BackScratch& sc = tls_back;
    sc.reserve(d.C, Dk, Dv);
    std::fill(sc.G.begin(), sc.G.begin() + SS, 0.0f);
    std::fill(sc.zero.begin(), sc.zero.begin() + SS, 0.0f);
    const int64_t b = bh / d.H;
    for (int64_t c = NC - 1; c >= 0; --c) {
      const int64_t t0 = c * d.C, t1 = std::min(d.T, t0 + d.C);
      if (c > 0) {  // the next chunk's rows and entry state, a few pages below this one's
        const int64_t r0 = bh * d.T + t0 - d.C;
        simd::prefetch_l2(q + r0 * Dk, d.C * Dk), simd::prefetch_l2(k + r0 * Dk, d.C * Dk);
        simd::prefetch_l2(v + r0 * Dv, d.C * Dv), simd::prefetch_l2(dout + r0 * Dv, d.C * Dv);
        simd::prefetch_l2(states + (bh * NC + c - 1) * SS, SS);
        simd::prefetch_l2_write(dq + r0 * Dk, d.C * Dk), simd::prefetch_l2_write(dk + r0 * Dk, d.C * Dk);
        simd::prefetch_l2_write(dv + r0 * Dv, d.C * Dv);
      }
      // Pieces between document starts, last first. Every piece but the chunk's first starts
      // from a zero state (a document start), so only the first one reads the saved state.
      for (int64_t p1 = t1, p0; p1 > t0; p1 = p0) {
        for (p0 = p1 - 1; p0 > t0 && !d.resets(b, p0); --p0) {
        }
        const bool reset = d.resets(b, p0);
        const float* S = p0 == t0 && !reset ? states + (bh * NC + c) * SS : sc.zero.data();
        const int64_t row = bh * d.T + p0;
        piece_backward(dq + row * Dk, dk + row * Dk, dv + row * Dv, dg + row, dbeta + row, dout + row * Dv, S,
                       q + row * Dk, k + row * Dk, v + row * Dv, g + row, beta + row, p1 - p0, Dk, Dv, pr, sc);
        // A document start zeroes the state: its gate has no effect and nothing flows further back.
        if (reset) {
          dg[row] = 0.0f;
          std::fill(sc.G.begin(), sc.G.begin() + SS, 0.0f);
        }
      }
    }
  }
}

}  // namespace mt
