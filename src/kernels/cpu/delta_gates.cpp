// delta_gates.cpp — see delta_gates.h. Every output element is written by one task with a
// serial reduction order, so results do not depend on the thread count.
#include "kernels/cpu/delta_gates.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/swiglu.h"

namespace mt {
namespace {
inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
inline float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// fn(row, tok, h) for every (b, h, t): row (b H + h) T + t of the heads'
// layout, tok = b T + t the token's row of the projection (its head h at
// column h Dh); (b, h) pairs in parallel, t in order within one.
template <typename Fn>
inline void for_each_head_row(int64_t B, int64_t T, int64_t H, Fn fn) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) fn((bb * H + h) * T + t, bb * T + t, h);
}
}  // namespace

void l2norm_heads_forward(float* y, float* rnorm, const float* src, int64_t ld, int64_t B, int64_t T, int64_t H,
                          int64_t Dh, float eps) {
  for_each_head_row(B, T, H, [&](int64_t row, int64_t tok, int64_t h) {
    const float* xr = src + tok * ld + h * Dh;
    float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
    for (int64_t e = 0; e < Dh; ++e) ss += xr[e] * xr[e];
    const float r = 1.0f / std::sqrt(ss + eps);
    rnorm[row] = r;
    float* yr = y + row * Dh;
    for (int64_t e = 0; e < Dh; ++e) yr[e] = xr[e] * r;
  });
}

// dx = r (dy - y (y . dy)).
void l2norm_heads_backward(float* dsrc, int64_t ld, const float* dy, const float* y, const float* rnorm, int64_t B,
                           int64_t T, int64_t H, int64_t Dh) {
  for_each_head_row(B, T, H, [&](int64_t row, int64_t tok, int64_t h) {
    const float *yr = y + row * Dh, *dyr = dy + row * Dh;
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int64_t e = 0; e < Dh; ++e) dot += yr[e] * dyr[e];
    float* dx = dsrc + tok * ld + h * Dh;
    for (int64_t e = 0; e < Dh; ++e) dx[e] = rnorm[row] * (dyr[e] - yr[e] * dot);
  });
}

void delta_gates_forward(float* g, float* beta, const float* a, const float* b, int64_t ld, const float* A_log,
                         const float* dt_bias, int64_t B, int64_t T, int64_t H) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t h = 0; h < H; ++h) {
      const float A = std::exp(A_log[h]);
      for (int64_t t = 0; t < T; ++t) {
        const int64_t n = bb * T + t, o = (bb * H + h) * T + t;
        g[o] = -A * softplus(a[n * ld + h] + dt_bias[h]);
        beta[o] = sigmoid(b[n * ld + h]);
      }
    }
}

// dg/dA_log = g, dg/da = dg/ddt_bias = -exp(A_log) sigmoid(a + dt_bias), dbeta/db = beta (1 - beta).
void delta_gates_backward(float* da, float* db, float* dA_log, float* ddt_bias, const float* dg,
                          const float* dbeta, const float* a, const float* b, int64_t ld, const float* A_log,
                          const float* dt_bias, int64_t B, int64_t T, int64_t H) {
#pragma omp parallel for schedule(static)
  for (int64_t h = 0; h < H; ++h) {
    const float A = std::exp(A_log[h]);
    double sA = 0.0, sdt = 0.0;
    for (int64_t bb = 0; bb < B; ++bb)
      for (int64_t t = 0; t < T; ++t) {
        const int64_t n = bb * T + t, o = (bb * H + h) * T + t;
        const float x = a[n * ld + h] + dt_bias[h];
        const float dx = dg[o] * -A * sigmoid(x);
        da[n * ld + h] = dx;
        sdt += dx;
        sA += double(dg[o]) * double(-A * softplus(x));
        const float be = sigmoid(b[n * ld + h]);
        db[n * ld + h] = dbeta[o] * be * (1.0f - be);
      }
    dA_log[h] += float(sA);
    ddt_bias[h] += float(sdt);
  }
}

void silu_gate_forward(float* y, const float* x, const float* z, int64_t ldz, int64_t N, int64_t C) {
  silu_gate_forward(static_cast<void*>(y), OperandForm::kFp32, x, z, ldz, N, C);
}

void silu_gate_forward(void* y, OperandForm form, const float* x, const float* z, int64_t ldz, int64_t N, int64_t C) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n)  // silu(z) * x
    write_operand_row(y, n * C, C, form, [&](float* out, int64_t c0, int64_t len) {
      swiglu_span(out, z + n * ldz + c0, x + n * C + c0, len);
    });
}

void silu_gate_backward(float* dx, float* dz, const float* dy, const float* x, const float* z, int64_t ldz, int64_t N,
                        int64_t C) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n)  // the SwiGLU's gradients with u = z, g = x
    swiglu_backward_span(dz + n * ldz, dx + n * C, dy + n * C, z + n * ldz, x + n * C, C);
}

void gather_heads(float* heads, const float* src, int64_t ld, int64_t B, int64_t T, int64_t H, int64_t Dh) {
  for_each_head_row(B, T, H, [&](int64_t row, int64_t tok, int64_t h) {
    std::copy_n(src + tok * ld + h * Dh, Dh, heads + row * Dh);
  });
}

void gather_heads_backward(float* dsrc, const float* dheads, int64_t ld, int64_t B, int64_t T, int64_t H,
                           int64_t Dh) {
  for_each_head_row(B, T, H, [&](int64_t row, int64_t tok, int64_t h) {
    std::copy_n(dheads + row * Dh, Dh, dsrc + tok * ld + h * Dh);
  });
}

}  // namespace mt
