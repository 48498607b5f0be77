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

// Stochastic rounding (Gupta et al. 2015, "Deep Learning with Limited
// Numerical Precision"): rounds |f| up to the next bf16 with probability
// equal to the fraction of the gap it covers, given 16 uniform random bits
// in the low half of `r`, so the expected result is f itself. A value that
// is already bf16 comes back unchanged; NaN stays a quiet NaN. For state
// that moves by less than half a bf16 ulp per step, which round-to-nearest
// would freeze: Adam's second moment at beta2 = 0.999 moves by 0.1% of its
// gap to g^2 per step, and an ulp is 0.4-0.8% of the value.
inline bf16 f32_to_bf16_stochastic(float f, uint32_t r) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t up = (u + (r & 0xffffu)) >> 16;
  return bf16{uint16_t((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40 : up)};
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
