// bf16.h — bfloat16 storage type and round-to-nearest-even conversions.
// Used for the bf16 operands of matrix multiplies (fp32 accumulation).
#pragma once
#include <cstdint>
#include <cstring>

namespace mt {

struct bf16 {
  uint16_t bits;
};

inline bf16 f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{uint16_t((u >> 16) | 0x40)};  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return bf16{uint16_t(u >> 16)};
}

inline float bf16_to_f32(bf16 b) {
  uint32_t u = uint32_t(b.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Converts n contiguous values, on the calling thread (for use inside a
// caller's parallel loop).
void convert_f32_to_bf16_span(bf16* out, const float* in, int64_t n);
// Same rounding, result kept in fp32 (the bf16 value, exactly); serial.
void round_f32_to_bf16_span(float* out, const float* in, int64_t n);
// Converts a rows x cols block with leading dimension `ld` into a dense
// rows x cols bf16 block (leading dimension cols). Parallel over rows.
void convert_f32_to_bf16(bf16* out, const float* in, int64_t rows, int64_t cols, int64_t ld);
// Same rounding, but the result stays in fp32 (the bf16 value, exactly):
// operands for an fp32 matmul that must compute what a bf16 one would.
void round_f32_to_bf16(float* out, const float* in, int64_t rows, int64_t cols, int64_t ld);

}  // namespace mt
