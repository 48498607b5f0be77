// rope.cpp — RoPE forward/backward over (BH, T, Dh) blocks.
#include "kernels/cpu/rope.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"

namespace mt {

double rope_attention_factor(const RopeParams& p) {
  if (p.scaling != RopeScalingKind::kYarn) return 1.0;
  if (p.attention_factor > 0) return p.attention_factor;
  return p.factor > 1.0 ? 0.1 * std::log(p.factor) + 1.0 : 1.0;
}

double rope_inv_freq(const RopeParams& p, int64_t i, int64_t Dh) {
  const double base = std::pow(p.theta, -2.0 * double(i) / double(Dh));
  switch (p.scaling) {
    case RopeScalingKind::kNone:
      return base;
    case RopeScalingKind::kLinear:
      return base / p.factor;
    case RopeScalingKind::kYarn: {
      // The pair index at which a frequency turns `rotations` times over original_len positions.
      auto pair_at = [&](double rotations) {
        return double(Dh) * std::log(double(p.original_len) / (rotations * 2.0 * M_PI)) / (2.0 * std::log(p.theta));
      };
      const double lo = std::max(0.0, std::floor(pair_at(p.beta_fast)));
      double hi = std::min(double(Dh - 1), std::ceil(pair_at(p.beta_slow)));
      if (hi == lo) hi += 0.001;  // a ramp of one pair
      const double ramp = std::clamp((double(i) - lo) / (hi - lo), 0.0, 1.0);
      const double keep = 1.0 - ramp;  // the share extrapolated (kept)
      return base / p.factor * (1.0 - keep) + base * keep;
    }
  }
  return base;
}

void rope_tables(float* cos_T, float* sin_T, int64_t T, int64_t Dh, const RopeParams& p) {
  const int64_t half = Dh / 2;
  const double af = rope_attention_factor(p);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < half; ++i) {
      const double freq = rope_inv_freq(p, i, Dh);
      cos_T[t * half + i] = float(std::cos(double(t) * freq) * af);
      sin_T[t * half + i] = float(std::sin(double(t) * freq) * af);
    }
}

namespace {
// One row: the pairs (x[i], x[i + half]) rotated by the row's angles (sign -1:
// backwards). Every rotation in this file goes through here, so the fused
// layout kernels below compute exactly what rope_forward/backward compute.
inline void rotate_row(float* yr, const float* xr, const float* c, const float* s, int64_t half, float sign) {
#pragma omp simd
  for (int64_t i = 0; i < half; ++i) {
    float a = xr[i], b = xr[i + half];
    yr[i] = a * c[i] - sign * b * s[i];
    yr[i + half] = b * c[i] + sign * a * s[i];
  }
}

// Rows of ld floats; the first Dh of each are rotated (ld > Dh: the rest is left as it is).
inline void rotate(float* y, const float* x, const float* cs, const float* sn, int64_t BH, int64_t T,
                   int64_t Dh, float sign, int64_t ld) {
  const int64_t half = Dh / 2;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < BH * T; ++r) {
    const int64_t t = r % T;
    rotate_row(y + r * ld, x + r * ld, cs + t * half, sn + t * half, half, sign);
  }
}

// Where column block h of token (b, t)'s qkv row lives head-major: in q
// (0), k (1) or v (2), from element `at` on.
struct HeadRow {
  int tensor;
  int64_t at;
};
inline HeadRow head_row(int64_t b, int64_t t, int64_t h, int64_t T, int64_t H, int64_t Hkv, int64_t Dh) {
  if (h < H) return {0, ((b * H + h) * T + t) * Dh};
  if (h < H + Hkv) return {1, ((b * Hkv + h - H) * T + t) * Dh};
  return {2, ((b * Hkv + h - H - Hkv) * T + t) * Dh};
}

// Heads above this width are refused in the bf16 forms (a stack row each).
constexpr int64_t kMaxDh = 1024;

// fn(t, tok, head, rotated) for every (b, t) and each of its H + 2 Hkv
// column blocks: tok the block's first element in the token-major qkv rows
// (B, T, (H + 2 Hkv) Dh), head where it lives head-major, rotated whether it
// is q or k (RoPE) rather than v. (b, t) pairs in parallel.
template <typename Fn>
inline void for_each_qkv_block(int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t Dh, Fn fn) {
  const int64_t ld = (H + 2 * Hkv) * Dh;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H + 2 * Hkv; ++h)
        fn(t, (b * T + t) * ld + h * Dh, head_row(b, t, h, T, H, Hkv, Dh), h < H + Hkv);
}

// Dh values of src, rotated by angles (c, s) when `rotated` (sign -1:
// backwards), written as elements [at, at + Dh) of dst in form f.
inline void put_row(void* dst, int64_t at, OperandForm f, const float* src, bool rotated, const float* c,
                    const float* s, int64_t Dh, float sign) {
  if (f == OperandForm::kFp32) {
    float* d = static_cast<float*>(dst) + at;
    if (rotated)
      rotate_row(d, src, c, s, Dh / 2, sign);
    else
      std::memcpy(d, src, sizeof(float) * size_t(Dh));
    return;
  }
  if (!rotated) return write_operand(dst, at, src, Dh, f);
  float row[kMaxDh];
  rotate_row(row, src, c, s, Dh / 2, sign);
  write_operand(dst, at, row, Dh, f);
}
}  // namespace

void split_qkv_rope(float* q, float* k, float* v, const float* qkv, const float* cos_T, const float* sin_T, int64_t B,
                    int64_t T, int64_t H, int64_t Hkv, int64_t Dh) {
  split_qkv_rope(q, k, v, OperandForm::kFp32, qkv, cos_T, sin_T, B, T, H, Hkv, Dh);
}

void split_qkv_rope(void* q, void* k, void* v, OperandForm f, const float* qkv, const float* cs, const float* sn,
                    int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t Dh) {
  MT_CHECK(f == OperandForm::kFp32 || Dh <= kMaxDh, "head dim {} above {}", Dh, kMaxDh);
  const int64_t half = Dh / 2;
  void* const heads[3] = {q, k, v};
  for_each_qkv_block(B, T, H, Hkv, Dh, [&](int64_t t, int64_t tok, HeadRow hr, bool rotated) {
    put_row(heads[hr.tensor], hr.at, f, qkv + tok, rotated, cs + t * half, sn + t * half, Dh, 1.0f);
  });
}

void split_qkv_rope_backward(float* dqkv, const float* dq, const float* dk, const float* dv, const float* cos_T,
                             const float* sin_T, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t Dh) {
  split_qkv_rope_backward(dqkv, OperandForm::kFp32, dq, dk, dv, cos_T, sin_T, B, T, H, Hkv, Dh);
}

void split_qkv_rope_backward(void* dqkv, OperandForm f, const float* dq, const float* dk, const float* dv,
                             const float* cs, const float* sn, int64_t B, int64_t T, int64_t H, int64_t Hkv,
                             int64_t Dh) {
  MT_CHECK(f == OperandForm::kFp32 || Dh <= kMaxDh, "head dim {} above {}", Dh, kMaxDh);
  const int64_t half = Dh / 2;
  const float* const heads[3] = {dq, dk, dv};
  for_each_qkv_block(B, T, H, Hkv, Dh, [&](int64_t t, int64_t tok, HeadRow hr, bool rotated) {
    put_row(dqkv, tok, f, heads[hr.tensor] + hr.at, rotated, cs + t * half, sn + t * half, Dh, -1.0f);
  });
}

void rope_forward(float* y, const float* x, const float* cos_T, const float* sin_T, int64_t BH,
                  int64_t T, int64_t Dh) {
  rotate(y, x, cos_T, sin_T, BH, T, Dh, 1.0f, Dh);
}

void rope_backward(float* dx, const float* dy, const float* cos_T, const float* sin_T, int64_t BH,
                   int64_t T, int64_t Dh) {
  rotate(dx, dy, cos_T, sin_T, BH, T, Dh, -1.0f, Dh);
}

void rope_forward_part(float* x, const float* cos_T, const float* sin_T, int64_t BH, int64_t T, int64_t Dr,
                       int64_t ld) {
  rotate(x, x, cos_T, sin_T, BH, T, Dr, 1.0f, ld);
}

void rope_backward_part(float* dx, const float* cos_T, const float* sin_T, int64_t BH, int64_t T, int64_t Dr,
                        int64_t ld) {
  rotate(dx, dx, cos_T, sin_T, BH, T, Dr, -1.0f, ld);
}

}  // namespace mt

namespace mt {
void rope_forward_at(float* y, const float* x, const float* cos_T, const float* sin_T, const int64_t* pos,
                     int64_t N, int64_t heads, int64_t Dh) {
  const int64_t half = Dh / 2;
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n)
    rotate(y + n * heads * Dh, x + n * heads * Dh, cos_T + pos[n] * half, sin_T + pos[n] * half, heads, 1, Dh,
           1.0f, Dh);
}
}  // namespace mt
