// rope.h — rotary position embedding, "rotate half" form: for i < Dh/2 the
// pair (x[i], x[i + Dh/2]) is rotated by angle t * theta^(-2i/Dh).
// Shapes: x, y (BH, T, Dh) with BH rows of T positions; cos/sin tables (T, Dh/2).
#pragma once
#include <cstdint>

#include "kernels/cpu/operand.h"

namespace mt {

// How the frequencies are stretched for a context longer than the one
// trained (context extension):
//  - linear: position interpolation (Chen et al. 2023), every frequency / factor;
//  - yarn: NTK-by-parts interpolation (Peng et al. 2023, "YaRN"): pairs that
//    turn fewer than beta_slow times over original_len positions are
//    interpolated (/ factor), those turning more than beta_fast times are
//    kept, a linear ramp in the pair index between; and cos, sin are scaled
//    by the attention factor (default 0.1 ln factor + 1), which multiplies
//    q.k by its square: the paper's temperature sqrt(1/t). The ramp's ends
//    are floor/ceil of the pair index where a frequency turns beta times
//    over original_len, as Hugging Face's _compute_yarn_parameters computes
//    them, so an exported model rotates as this one does.
enum class RopeScalingKind { kNone, kLinear, kYarn };
struct RopeParams {
  double theta = 10000.0;
  RopeScalingKind scaling = RopeScalingKind::kNone;
  double factor = 1.0;       // context extension ratio s (>= 1)
  int64_t original_len = 0;  // yarn: the context length trained before the extension
  double beta_fast = 32.0, beta_slow = 1.0;
  double attention_factor = 0.0;  // yarn: 0 = 0.1 ln(factor) + 1
  bool operator==(const RopeParams&) const = default;
};
// The inverse frequency of pair i (< Dh / 2), and the factor on cos and sin.
double rope_inv_freq(const RopeParams& p, int64_t i, int64_t Dh);
double rope_attention_factor(const RopeParams& p);

void rope_tables(float* cos_T, float* sin_T, int64_t T, int64_t Dh, const RopeParams& p);
inline void rope_tables(float* cos_T, float* sin_T, int64_t T, int64_t Dh, double theta) {
  RopeParams p;
  p.theta = theta;
  rope_tables(cos_T, sin_T, T, Dh, p);
}

// y may alias x.
void rope_forward(float* y, const float* x, const float* cos_T, const float* sin_T, int64_t BH,
                  int64_t T, int64_t Dh);
// The transpose of a rotation is the rotation by the negative angle; dx may alias dy.
void rope_backward(float* dx, const float* dy, const float* cos_T, const float* sin_T, int64_t BH,
                   int64_t T, int64_t Dh);

// split_qkv (heads.h) and rope_forward on q and k in one pass over memory;
// the same values as the three calls, bit for bit.
void split_qkv_rope(float* q, float* k, float* v, const float* qkv, const float* cos_T, const float* sin_T, int64_t B,
                    int64_t T, int64_t H, int64_t Hkv, int64_t Dh);
// The same, q, k, v written in operand form f (operand.h): each rotated row
// rounded once, as a bf16 product would round it (f = kFp32: the above).
void split_qkv_rope(void* q, void* k, void* v, OperandForm f, const float* qkv, const float* cos_T,
                    const float* sin_T, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t Dh);
// rope_backward on dq and dk, then split_qkv_backward, in one pass.
void split_qkv_rope_backward(float* dqkv, const float* dq, const float* dk, const float* dv, const float* cos_T,
                             const float* sin_T, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t Dh);
// The same, dqkv written in operand form f: each token's merged row rounded
// once, for a dqkv only the QKV projection's GEMMs read.
void split_qkv_rope_backward(void* dqkv, OperandForm f, const float* dq, const float* dk, const float* dv,
                             const float* cos_T, const float* sin_T, int64_t B, int64_t T, int64_t H, int64_t Hkv,
                             int64_t Dh);

// In place on part of each row: x (BH, T, ld), the first Dr values of every
// row rotated (multi-head latent attention's decoupled RoPE dims, DeepSeek-V2
// section 2.1.3; tables built for Dr).
void rope_forward_part(float* x, const float* cos_T, const float* sin_T, int64_t BH, int64_t T, int64_t Dr,
                       int64_t ld);
void rope_backward_part(float* dx, const float* cos_T, const float* sin_T, int64_t BH, int64_t T, int64_t Dr,
                        int64_t ld);

}  // namespace mt

namespace mt {
// Rows at arbitrary positions (incremental decoding): x, y (N, heads, Dh),
// row n rotated by the angle of position pos[n], exactly as rope_forward
// rotates position pos[n]. y may alias x.
void rope_forward_at(float* y, const float* x, const float* cos_T, const float* sin_T, const int64_t* pos,
                     int64_t N, int64_t heads, int64_t Dh);
}  // namespace mt
