// swiglu.cpp — elementwise, row-parallel, vectorised with the shared exp (simd.h).
#include "kernels/cpu/swiglu.h"

#include <algorithm>

#include "kernels/cpu/simd.h"

namespace mt {

using namespace simd;

void swiglu_span(float* z, const float* u, const float* g, int64_t n) {
  for (int64_t f = 0; f < n; f += kLanes) {
    const Mask k = tail_mask(n - f);
    const Vec uf = load(k, u + f);
    const Vec gf = load(k, g + f);
    store(z + f, k, mul(mul(uf, sigmoid(uf)), gf));
  }
}

void swiglu_backward_span(float* du, float* dg, const float* dz, const float* u, const float* g, int64_t n) {
  const Vec one = set1(1.0f);
  for (int64_t f = 0; f < n; f += kLanes) {
    const Mask k = tail_mask(n - f);
    const Vec uf = load(k, u + f);
    const Vec gf = load(k, g + f);
    const Vec d = load(k, dz + f);
    const Vec sig = sigmoid(uf);
    const Vec silu = mul(uf, sig);
    store(dg + f, k, mul(d, silu));
    // d silu/du = sig * (1 + u (1 - sig))
    const Vec dsilu = mul(sig, fmadd(uf, sub(one, sig), one));
    store(du + f, k, mul(mul(d, gf), dsilu));
  }
}

namespace {

// One row: dh = [du | dg] from dz and h = [u | g].
inline void swiglu_backward_row(float* dh, const float* dz, const float* h, int64_t F) {
  swiglu_backward_span(dh, dh + F, dz, h, h + F, F);
}

// The backward's bf16 rows are computed in fp32 a chunk at a time, on the stack, then rounded.
constexpr int64_t kChunk = 512;

// Row m of z = swiglu(h) in form zf.
inline void swiglu_forward_row(void* z, OperandForm zf, const float* h, int64_t m, int64_t F) {
  const float* u = h + m * 2 * F;
  const float* g = u + F;
  write_operand_row(z, m * F, F, zf,
                    [&](float* out, int64_t f0, int64_t len) { swiglu_span(out, u + f0, g + f0, len); });
}

// Row m + 1's h and dz, and the line its dh goes to, fetched while row m
// computes. Read cold (the forward's h13, long evicted), these row streams
// were left to demand misses on Zen 5: a 512-row expert's backward took
// 290-420 us from memory against 53 us from cache, and 160-200 us with this.
inline void prefetch_backward_row(void* dh, OperandForm f, const float* dz, const float* h, int64_t m, int64_t F) {
  simd::prefetch_l2(h + m * 2 * F, 2 * F);
  simd::prefetch_l2(dz + m * F, F);
  simd::prefetch_l2_write_bytes(operand_element(dh, m * 2 * F, f), operand_floats(2 * F, f) * int64_t(sizeof(float)));
}

// Row m of dh = swiglu'(dz, h) in form f: [du | dg], each a chunk at a time.
inline void swiglu_backward_row(void* dh, OperandForm f, const float* dz, const float* h, int64_t m, int64_t F) {
  if (f != OperandForm::kBf16) {
    float* dr = static_cast<float*>(dh) + m * 2 * F;
    swiglu_backward_row(dr, dz + m * F, h + m * 2 * F, F);
    if (f == OperandForm::kBf16InFp32) write_operand(dr, 0, dr, 2 * F, f);
    return;
  }
  alignas(64) float tmp[2 * kChunk];
  for (int64_t f0 = 0; f0 < F; f0 += kChunk) {
    const int64_t len = std::min(kChunk, F - f0);
    swiglu_backward_span(tmp, tmp + len, dz + m * F + f0, h + m * 2 * F + f0, h + m * 2 * F + F + f0, len);
    write_operand(dh, m * 2 * F + f0, tmp, len, f);
    write_operand(dh, m * 2 * F + F + f0, tmp + len, len, f);
  }
}
}  // namespace

void swiglu_forward(float* z, const float* h, int64_t M, int64_t F) { swiglu_forward(z, OperandForm::kFp32, h, M, F); }

// Row m + 1's h fetched while row m computes, as in the backward: the whole
// layer's h (a shared expert's 4096 x 704 floats) has left L2 by the time
// this pass reads it, and from memory the pass ran 2.5-4x slower without
// the hint (Zen 5).
void swiglu_forward(void* z, OperandForm zf, const float* h, int64_t M, int64_t F) {
#pragma omp parallel for schedule(static) if (M * F > 16384)
  for (int64_t m = 0; m < M; ++m) {
    if (m + 1 < M) simd::prefetch_l2(h + (m + 1) * 2 * F, 2 * F);
    swiglu_forward_row(z, zf, h, m, F);
  }
}

void swiglu_backward(float* dh, const float* dz, const float* h, int64_t M, int64_t F) {
  swiglu_backward(dh, OperandForm::kFp32, dz, h, M, F);
}

void swiglu_backward(void* dh, OperandForm f, const float* dz, const float* h, int64_t M, int64_t F) {
#pragma omp parallel for schedule(static) if (M * F > 16384)
  for (int64_t m = 0; m < M; ++m) {
    if (m + 1 < M) prefetch_backward_row(dh, f, dz, h, m + 1, F);
    swiglu_backward_row(dh, f, dz, h, m, F);
  }
}

void swiglu_forward_on_thread(void* z, OperandForm f, const float* h, int64_t M, int64_t F) {
  for (int64_t m = 0; m < M; ++m) swiglu_forward_row(z, f, h, m, F);
}

void swiglu_backward_on_thread(void* dh, OperandForm f, const float* dz, const float* h, int64_t M, int64_t F) {
  for (int64_t m = 0; m < M; ++m) {
    if (m + 1 < M) prefetch_backward_row(dh, f, dz, h, m + 1, F);
    swiglu_backward_row(dh, f, dz, h, m, F);
  }
}

}  // namespace mt
