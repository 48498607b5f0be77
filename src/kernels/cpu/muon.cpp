// muon.cpp — Newton–Schulz through gemm(), and the elementwise optimizer
// steps (serial over their range, vectorised; the caller splits the work).
#include "kernels/cpu/muon.h"

#include <algorithm>
#include <cmath>

#include "core/reduce.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/state_io.h"

namespace mt {

int64_t newton_schulz_scratch(int64_t rows, int64_t cols) {
  const int64_t m = std::min(rows, cols), n = std::max(rows, cols);
  return 2 * m * n + 2 * m * m;
}

void newton_schulz(float* out, const float* g, int64_t rows, int64_t cols, const NewtonSchulzParams& p,
                   float* scratch) {
  // Work on the wide orientation (m <= n): the products are then m x m.
  const bool tall = rows > cols;
  const int64_t m = tall ? cols : rows, n = tall ? rows : cols;
  float* X = scratch;      // (m, n)
  float* T = X + m * n;    // (m, n)  B X
  float* A = T + m * n;    // (m, m)  X X^T
  float* B = A + m * m;    // (m, m)  b A + c A A
  const float inv = float(1.0 / (std::sqrt(sum_squares(g, rows * cols)) + double(p.eps)));
  const bool par = m * n > (1 << 16);
  if (tall) {
#pragma omp parallel for schedule(static) if (par)
    for (int64_t j = 0; j < m; ++j)
      for (int64_t i = 0; i < n; ++i) X[j * n + i] = g[i * cols + j] * inv;
  } else {
#pragma omp parallel for simd schedule(static) if (par)
    for (int64_t i = 0; i < m * n; ++i) X[i] = g[i] * inv;
  }
  for (int64_t s = 0; s < p.steps; ++s) {
    gemm(A, X, X, GemmShape{m, m, n, Trans::kNo, Trans::kYes}, 0.0f, MatmulPrecision::kFp32);
    gemm(B, A, A, GemmShape{m, m, m}, 0.0f, MatmulPrecision::kFp32);
#pragma omp simd
    for (int64_t i = 0; i < m * m; ++i) B[i] = p.b * A[i] + p.c * B[i];
    gemm(T, B, X, GemmShape{m, n, m}, 0.0f, MatmulPrecision::kFp32);
#pragma omp parallel for simd schedule(static) if (par)
    for (int64_t i = 0; i < m * n; ++i) X[i] = p.a * X[i] + T[i];
  }
  if (tall) {
#pragma omp parallel for schedule(static) if (par)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) out[i * cols + j] = X[j * n + i];
  } else {
    std::copy(X, X + m * n, out);
  }
}

namespace {

template <typename S>
void muon_momentum_impl(S* buf, float* u, const float* g, int64_t n, float beta, float grad_scale, Nesterov nesterov,
                        const StateDither& d) {
  const float one_minus = 1.0f - beta;
  const DitherRange dither(d.key, d.first);
  if (nesterov == Nesterov::kYes) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const float gi = one_minus * (g[i] * grad_scale);
      const float b = state_io::store(buf, i, beta * state_io::load(buf, i) + gi, state_io::bits<S>(dither, i));
      u[i] = gi + beta * b;
    }
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      u[i] = state_io::store(buf, i, beta * state_io::load(buf, i) + one_minus * (g[i] * grad_scale),
                             state_io::bits<S>(dither, i));
  }
}

}  // namespace

void muon_momentum(float* buf, float* u, const float* g, int64_t n, float beta, float grad_scale,
                   Nesterov nesterov, const StateDither&) {
  muon_momentum_impl(buf, u, g, n, beta, grad_scale, nesterov, StateDither{});
}

void muon_momentum(bf16* buf, float* u, const float* g, int64_t n, float beta, float grad_scale, Nesterov nesterov,
                   const StateDither& d) {
  muon_momentum_impl(buf, u, g, n, beta, grad_scale, nesterov, d);
}

namespace {

struct AdamScalars {
  float inv_bc1, inv_sqrt_bc2;
};
AdamScalars adam_scalars(const AdamDirParams& a) {
  const float bc1 = 1.0f - float(std::pow(double(a.beta1), double(a.step)));
  const float bc2 = 1.0f - float(std::pow(double(a.beta2), double(a.step)));
  return {1.0f / bc1, 1.0f / std::sqrt(bc2)};
}
// One definition of u, so both passes compute it bitwise alike.
inline float adam_u(float m, float v, const AdamScalars& s, float eps) {
  return (m * s.inv_bc1) / (std::sqrt(v) * s.inv_sqrt_bc2 + eps);
}

template <typename S>
double adam_direction_impl(S* m, S* v, const float* g, int64_t n, const AdamDirParams& a, const StateDither& d) {
  const AdamScalars s = adam_scalars(a);
  const float beta1 = a.beta1, beta2 = a.beta2, eps = a.eps, grad_scale = a.grad_scale;  // registers, not aliases
  const DitherRange dither(d.key, d.first);
  double acc = 0.0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i] * grad_scale;
    const uint32_t r = state_io::bits<S>(dither, i);
    const float mi = state_io::store(m, i, beta1 * state_io::load(m, i) + (1.0f - beta1) * gi, r);
    const float vi = state_io::store(v, i, beta2 * state_io::load(v, i) + (1.0f - beta2) * gi * gi, r >> 16);
    const float u = adam_u(mi, vi, s, eps);
    acc += double(u) * double(u);
  }
  return acc;
}

template <typename S>
double adam_direction_axpy_impl(float* x, const S* m, const S* v, int64_t n, const AdamDirParams& a, float k) {
  const AdamScalars s = adam_scalars(a);
  const float eps = a.eps;
  double acc = 0.0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) {
    x[i] -= k * adam_u(state_io::load(m, i), state_io::load(v, i), s, eps);
    acc += double(x[i]) * double(x[i]);
  }
  return acc;
}

}  // namespace

double adam_direction(float* m, float* v, const float* g, int64_t n, const AdamDirParams& a, const StateDither&) {
  return adam_direction_impl(m, v, g, n, a, StateDither{});
}
double adam_direction(bf16* m, bf16* v, const float* g, int64_t n, const AdamDirParams& a, const StateDither& d) {
  return adam_direction_impl(m, v, g, n, a, d);
}
double adam_direction_axpy(float* x, const float* m, const float* v, int64_t n, const AdamDirParams& a, float k) {
  return adam_direction_axpy_impl(x, m, v, n, a, k);
}
double adam_direction_axpy(float* x, const bf16* m, const bf16* v, int64_t n, const AdamDirParams& a, float k) {
  return adam_direction_axpy_impl(x, m, v, n, a, k);
}

void decay_axpy(float* x, const float* u, int64_t n, float decay, float k) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] * decay - k * u[i];
}

double axpy_sum_squares(float* x, const float* u, int64_t n, float k) {
  double acc = 0.0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) {
    x[i] -= k * u[i];
    acc += double(x[i]) * double(x[i]);
  }
  return acc;
}

void scale_inplace(float* x, int64_t n, float k) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) x[i] *= k;
}

}  // namespace mt
