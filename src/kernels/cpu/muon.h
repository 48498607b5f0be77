// muon.h — the math of Muon and of the Hyperball wrapper (docs/optimizers.md):
// the Newton–Schulz orthogonalisation of one whole matrix, the momentum and
// Adam-direction updates over a contiguous range, and the small elementwise
// steps Hyperball adds (x -= k u, x *= k). Kernels take pointers and sizes;
// the optimizer (optim/optimizer.cpp) decides which tensor gets which.
//
// Newton–Schulz (Jordan et al. 2024, "Muon: An optimizer for hidden layers",
// kellerjordan.github.io/posts/muon): X = G / (||G||_F + eps), transposed so
// that it is wide (rows <= cols), then `steps` times
//   A = X X^T,  B = b A + c A A,  X = a X + B X
// an odd quintic in X whose coefficients (a, b, c) = (3.4445, -4.7750, 2.0315)
// maximise the slope at zero, so that after 5 steps every singular value of X
// lies in roughly [0.7, 1.2] (not exactly 1: Jordan's choice, trading exact
// orthogonality for fewer steps). Here in fp32 through gemm(); the reference
// implementations run it in bf16 on GPUs.
#pragma once
#include <cstdint>

#include "kernels/cpu/adamw.h"  // StateDither

namespace mt {

struct NewtonSchulzParams {
  float a = 3.4445f, b = -4.7750f, c = 2.0315f;  // quintic coefficients
  int64_t steps = 5;
  float eps = 1e-7f;  // added to ||G||_F (Jordan's value)
};

// Floats of scratch newton_schulz needs for a rows x cols matrix:
// X and one product (m x n each), A and B (m x m each), m = min, n = max.
int64_t newton_schulz_scratch(int64_t rows, int64_t cols);

// out (rows x cols, row-major) = NS(g); out may alias g. Deterministic for a
// given thread count (gemm; docs/kernels.md).
void newton_schulz(float* out, const float* g, int64_t rows, int64_t cols, const NewtonSchulzParams& p,
                   float* scratch);

// Momentum of Muon over [0, n), exponential-moving-average form:
//   buf = beta buf + (1 - beta) s g;   u = nesterov ? (1 - beta) s g + beta buf : buf
// (s = grad_scale, the clipping factor). Moonlight's buf = mu buf + g and
// u = g + mu buf give the same direction scaled by 1 / (1 - beta), which
// orthogonalisation removes.
enum class Nesterov { kNo, kYes };
// The dither rounds bf16 momentum (adamw.h; fp32 ignores it); u comes from
// the stored value.
void muon_momentum(float* buf, float* u, const float* g, int64_t n, float beta, float grad_scale, Nesterov nesterov,
                   const StateDither& d = {});
void muon_momentum(bf16* buf, float* u, const float* g, int64_t n, float beta, float grad_scale, Nesterov nesterov,
                   const StateDither& d);

// Adam's moments and its direction u = m_hat / (sqrt(v_hat) + eps) over
// [0, n), the same arithmetic as adamw_update (kernels/cpu/adamw.h) without
// touching the parameters. adam_direction updates m and v and returns
// sum(u^2); adam_direction_axpy then applies x -= k u with u recomputed from
// the updated moments (bitwise the same u) and returns sum(x^2) after it.
// Sums in double, serial: callers cut fixed blocks for thread invariance.
struct AdamDirParams {
  float beta1, beta2, eps;
  float grad_scale;
  int64_t step;  // 1-based, for bias correction
};
double adam_direction(float* m, float* v, const float* g, int64_t n, const AdamDirParams& a,
                      const StateDither& d = {});
double adam_direction_axpy(float* x, const float* m, const float* v, int64_t n, const AdamDirParams& a, float k);
// bf16 moments (adamw.h): u from the moments as stored, in both passes.
double adam_direction(bf16* m, bf16* v, const float* g, int64_t n, const AdamDirParams& a, const StateDither& d);
double adam_direction_axpy(float* x, const bf16* m, const bf16* v, int64_t n, const AdamDirParams& a, float k);

// x = decay x - k u (Muon's step with decoupled weight decay).
void decay_axpy(float* x, const float* u, int64_t n, float decay, float k);
// x -= k u; returns sum(x^2) after the update, in double (serial).
double axpy_sum_squares(float* x, const float* u, int64_t n, float k);
// x *= k.
void scale_inplace(float* x, int64_t n, float k);

}  // namespace mt
