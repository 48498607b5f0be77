// heads.cpp — pure copies, parallel over (batch, time).
#include "kernels/cpu/heads.h"

#include <cstring>

namespace mt {
namespace {
// dir = +1: token-major -> head-major; -1: back.
void shuffle(float* tok, float* heads, int64_t B, int64_t T, int64_t Hs, int64_t Dh, int64_t ld, int64_t col0,
             int dir) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < Hs; ++h) {
        float* tp = tok + (b * T + t) * ld + col0 + h * Dh;
        float* hp = heads + ((b * Hs + h) * T + t) * Dh;
        if (dir > 0)
          std::memcpy(hp, tp, sizeof(float) * Dh);
        else
          std::memcpy(tp, hp, sizeof(float) * Dh);
      }
}
}  // namespace

void split_qkv(float* q, float* k, float* v, const float* qkv, int64_t B, int64_t T, int64_t H, int64_t Hkv,
               int64_t Dh) {
  const int64_t ld = (H + 2 * Hkv) * Dh;
  float* src = const_cast<float*>(qkv);
  shuffle(src, q, B, T, H, Dh, ld, 0, +1);
  shuffle(src, k, B, T, Hkv, Dh, ld, H * Dh, +1);
  shuffle(src, v, B, T, Hkv, Dh, ld, (H + Hkv) * Dh, +1);
}

void split_qkv_backward(float* dqkv, const float* dq, const float* dk, const float* dv, int64_t B, int64_t T, int64_t H,
                        int64_t Hkv, int64_t Dh) {
  const int64_t ld = (H + 2 * Hkv) * Dh;
  shuffle(dqkv, const_cast<float*>(dq), B, T, H, Dh, ld, 0, -1);
  shuffle(dqkv, const_cast<float*>(dk), B, T, Hkv, Dh, ld, H * Dh, -1);
  shuffle(dqkv, const_cast<float*>(dv), B, T, Hkv, Dh, ld, (H + Hkv) * Dh, -1);
}

void merge_heads(float* out, const float* o, int64_t B, int64_t T, int64_t H, int64_t Dh, int64_t ld) {
  shuffle(out, const_cast<float*>(o), B, T, H, Dh, ld ? ld : H * Dh, 0, -1);
}

void merge_heads_backward(float* dout_heads, const float* dout, int64_t B, int64_t T, int64_t H, int64_t Dh,
                          int64_t ld) {
  shuffle(const_cast<float*>(dout), dout_heads, B, T, H, Dh, ld ? ld : H * Dh, 0, +1);
}

}  // namespace mt
