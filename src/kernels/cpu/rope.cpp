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

// Token-major qkv rows (B, T, (H + 2 Hkv) Dh) <-> head-major q, k, v, with
// q and k rotated on the way: dir +1 splits and rotates forward, -1 rotates
// backward and merges.
void qkv_heads_rope(float* qkv, float* q, float* k, float* v, const float* cs, const float* sn, int64_t B, int64_t T,
                    int64_t H, int64_t Hkv, int64_t Dh, int dir) {
  const int64_t ld = (H + 2 * Hkv) * Dh, half = Dh / 2;
  const float sign = dir > 0 ? 1.0f : -1.0f;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      float* row = qkv + (b * T + t) * ld;
      const float* c = cs + t * half;
      const float* s = sn + t * half;
      for (int64_t h = 0; h < H + 2 * Hkv; ++h) {
        float* tok = row + h * Dh;
        const HeadRow hr = head_row(b, t, h, T, H, Hkv, Dh);
        float* head = (hr.tensor == 0 ? q : hr.tensor == 1 ? k : v) + hr.at;
        float* dst = dir > 0 ? head : tok;
        const float* src = dir > 0 ? tok : head;
        if (h < H + Hkv)
          rotate_row(dst, src, c, s, half, sign);
        else
          std::memcpy(dst, src, sizeof(float) * size_t(Dh));
      }
    }
}
}  // namespace

void split_qkv_rope(float* q, float* k, float* v, const float* qkv, const float* cos_T, const float* sin_T, int64_t B,
                    int64_t T, int64_t H, int64_t Hkv, int64_t Dh) {
  qkv_heads_rope(const_cast<float*>(qkv), q, k, v, cos_T, sin_T, B, T, H, Hkv, Dh, +1);
}

void split_qkv_rope(void* q, void* k, void* v, OperandForm f, const float* qkv, const float* cs, const float* sn,
                    int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t Dh) {
  if (f == OperandForm::kFp32)
    return split_qkv_rope(static_cast<float*>(q), static_cast<float*>(k), static_cast<float*>(v), qkv, cs, sn, B, T,
                          H, Hkv, Dh);
  constexpr int64_t kMaxDh = 1024;
  MT_CHECK(Dh <= kMaxDh, "head dim {} above {}", Dh, kMaxDh);
  const int64_t ld = (H + 2 * Hkv) * Dh, half = Dh / 2;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const float* row = qkv + (b * T + t) * ld;
      float rotated[kMaxDh];
      void* const heads[3] = {q, k, v};
      for (int64_t h = 0; h < H + 2 * Hkv; ++h) {
        const float* tok = row + h * Dh;
        const HeadRow hr = head_row(b, t, h, T, H, Hkv, Dh);
        if (hr.tensor < 2) {
          rotate_row(rotated, tok, cs + t * half, sn + t * half, half, 1.0f);
          write_operand(heads[hr.tensor], hr.at, rotated, Dh, f);
        } else {
          write_operand(heads[2], hr.at, tok, Dh, f);
        }
      }
    }
}

void split_qkv_rope_backward(float* dqkv, const float* dq, const float* dk, const float* dv, const float* cos_T,
                             const float* sin_T, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t Dh) {
  qkv_heads_rope(dqkv, const_cast<float*>(dq), const_cast<float*>(dk), const_cast<float*>(dv), cos_T, sin_T, B, T, H,
                 Hkv, Dh, -1);
}

void split_qkv_rope_backward(void* dqkv, OperandForm f, const float* dq, const float* dk, const float* dv,
                             const float* cs, const float* sn, int64_t B, int64_t T, int64_t H, int64_t Hkv,
                             int64_t Dh) {
  if (f == OperandForm::kFp32)
    return split_qkv_rope_backward(static_cast<float*>(dqkv), dq, dk, dv, cs, sn, B, T, H, Hkv, Dh);
  const int64_t ld = (H + 2 * Hkv) * Dh, half = Dh / 2;
  constexpr int64_t kMaxDh = 1024;
  MT_CHECK(Dh <= kMaxDh, "head dim {} above {}", Dh, kMaxDh);
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      float rotated[kMaxDh];
      const float* const heads[3] = {dq, dk, dv};
      for (int64_t h = 0; h < H + 2 * Hkv; ++h) {
        const HeadRow hr = head_row(b, t, h, T, H, Hkv, Dh);
        const int64_t at = (b * T + t) * ld + h * Dh;
        if (hr.tensor < 2) {
          rotate_row(rotated, heads[hr.tensor] + hr.at, cs + t * half, sn + t * half, half, -1.0f);
          write_operand(dqkv, at, rotated, Dh, f);
        } else {
          write_operand(dqkv, at, heads[2] + hr.at, Dh, f);
        }
      }
    }
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
