// mla_heads.cpp — pure copies parallel over tokens; the backward's sum over
// heads runs serially inside one token's task.
#include "kernels/cpu/mla_heads.h"

#include <cstring>

namespace mt {

void mla_kv_heads(float* k, float* v, const float* kv, const float* k_rope, const MlaHeadDims& d) {
  const int64_t Dqk = d.Dn + d.Dr, ld = d.H * (d.Dn + d.Dv);
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t t = 0; t < d.T; ++t) {
      const int64_t n = b * d.T + t;
      const float* row = kv + n * ld;
      for (int64_t h = 0; h < d.H; ++h) {
        float* kh = k + ((b * d.H + h) * d.T + t) * Dqk;
        std::memcpy(kh, row + h * d.Dn, sizeof(float) * d.Dn);
        std::memcpy(kh + d.Dn, k_rope + n * d.Dr, sizeof(float) * d.Dr);
        std::memcpy(v + ((b * d.H + h) * d.T + t) * d.Dv, row + d.H * d.Dn + h * d.Dv, sizeof(float) * d.Dv);
      }
    }
}

void mla_kv_heads_backward(float* dkv, float* dk_rope, const float* dk, const float* dv, const MlaHeadDims& d) {
  const int64_t Dqk = d.Dn + d.Dr, ld = d.H * (d.Dn + d.Dv);
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t t = 0; t < d.T; ++t) {
      const int64_t n = b * d.T + t;
      float* row = dkv + n * ld;
      float* dr = dk_rope + n * d.Dr;
      for (int64_t e = 0; e < d.Dr; ++e) dr[e] = 0.0f;
      for (int64_t h = 0; h < d.H; ++h) {
        const float* dkh = dk + ((b * d.H + h) * d.T + t) * Dqk;
        std::memcpy(row + h * d.Dn, dkh, sizeof(float) * d.Dn);
        for (int64_t e = 0; e < d.Dr; ++e) dr[e] += dkh[d.Dn + e];
        std::memcpy(row + d.H * d.Dn + h * d.Dv, dv + ((b * d.H + h) * d.T + t) * d.Dv, sizeof(float) * d.Dv);
      }
    }
}

void split_columns(float* a, float* b, const float* x, int64_t N, int64_t Da, int64_t Db, int64_t ld) {
  if (ld == 0) ld = Da + Db;
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    std::memcpy(a + n * Da, x + n * ld, sizeof(float) * Da);
    std::memcpy(b + n * Db, x + n * ld + Da, sizeof(float) * Db);
  }
}

void concat_columns(float* x, const float* a, const float* b, int64_t N, int64_t Da, int64_t Db, int64_t ld) {
  if (ld == 0) ld = Da + Db;
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    std::memcpy(x + n * ld, a + n * Da, sizeof(float) * Da);
    std::memcpy(x + n * ld + Da, b + n * Db, sizeof(float) * Db);
  }
}

}  // namespace mt
