// rope.cpp — RoPE forward/backward over (BH, T, Dh) blocks.
#include "kernels/cpu/rope.h"

#include <cmath>

namespace mt {

void rope_tables(float* cos_T, float* sin_T, int64_t T, int64_t Dh, double theta) {
  const int64_t half = Dh / 2;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < half; ++i) {
      double freq = std::pow(theta, -2.0 * double(i) / double(Dh));
      cos_T[t * half + i] = float(std::cos(double(t) * freq));
      sin_T[t * half + i] = float(std::sin(double(t) * freq));
    }
}

namespace {
// Rows of ld floats; the first Dh of each are rotated (ld > Dh: the rest is left as it is).
inline void rotate(float* y, const float* x, const float* cs, const float* sn, int64_t BH, int64_t T,
                   int64_t Dh, float sign, int64_t ld) {
  const int64_t half = Dh / 2;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < BH * T; ++r) {
    const int64_t t = r % T;
    const float* xr = x + r * ld;
    float* yr = y + r * ld;
    const float* c = cs + t * half;
    const float* s = sn + t * half;
#pragma omp simd
    for (int64_t i = 0; i < half; ++i) {
      float a = xr[i], b = xr[i + half];
      yr[i] = a * c[i] - sign * b * s[i];
      yr[i + half] = b * c[i] + sign * a * s[i];
    }
  }
}
}  // namespace

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
