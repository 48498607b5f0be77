// bf16.cpp — bulk fp32 -> bf16 conversion (AVX-512 BF16 where available).
#include "core/bf16.h"

#include <immintrin.h>

namespace mt {

void convert_f32_to_bf16(bf16* out, const float* in, int64_t rows, int64_t cols, int64_t ld) {
#pragma omp parallel for schedule(static) if (rows * cols > 65536)
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = in + r * ld;
    bf16* dst = out + r * cols;
    int64_t c = 0;
#if defined(__AVX512BF16__)
    for (; c + 16 <= cols; c += 16) {
      __m256bh v = _mm512_cvtneps_pbh(_mm512_loadu_ps(src + c));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + c), reinterpret_cast<__m256i&>(v));
    }
#endif
    for (; c < cols; ++c) dst[c] = f32_to_bf16(src[c]);
  }
}

void round_f32_to_bf16(float* out, const float* in, int64_t rows, int64_t cols, int64_t ld) {
#pragma omp parallel for schedule(static) if (rows * cols > 65536)
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = bf16_to_f32(f32_to_bf16(in[r * ld + c]));
}

}  // namespace mt
