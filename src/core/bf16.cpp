// bf16.cpp — bulk fp32 -> bf16 conversion (AVX-512 BF16 where available).
#include "core/bf16.h"

#include <immintrin.h>

namespace mt {

void convert_f32_to_bf16_span(bf16* dst, const float* src, int64_t n) {
  int64_t c = 0;
#if defined(__AVX512BF16__)
  for (; c + 16 <= n; c += 16) {
    __m256bh v = _mm512_cvtneps_pbh(_mm512_loadu_ps(src + c));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + c), reinterpret_cast<__m256i&>(v));
  }
#endif
  // f32_to_bf16 without its branch, so the compiler vectorises it (AVX2).
  uint16_t* d = reinterpret_cast<uint16_t*>(dst);
#pragma omp simd
  for (int64_t i = c; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, src + i, 4);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const uint32_t quiet = (u >> 16) | 0x40u;
    d[i] = uint16_t((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
  }
}

void round_f32_to_bf16_span(float* out, const float* in, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_f32(f32_to_bf16(in[i]));
}

void convert_f32_to_bf16(bf16* out, const float* in, int64_t rows, int64_t cols, int64_t ld) {
#pragma omp parallel for schedule(static) if (rows * cols > 65536)
  for (int64_t r = 0; r < rows; ++r) convert_f32_to_bf16_span(out + r * cols, in + r * ld, cols);
}

void round_f32_to_bf16(float* out, const float* in, int64_t rows, int64_t cols, int64_t ld) {
#pragma omp parallel for schedule(static) if (rows * cols > 65536)
  for (int64_t r = 0; r < rows; ++r) round_f32_to_bf16_span(out + r * cols, in + r * ld, cols);
}

}  // namespace mt
