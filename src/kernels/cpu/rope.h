// rope.h — rotary position embedding, "rotate half" form: for i < Dh/2 the
// pair (x[i], x[i + Dh/2]) is rotated by angle t * theta^(-2i/Dh).
// Shapes: x, y (BH, T, Dh) with BH rows of T positions; cos/sin tables (T, Dh/2).
#pragma once
#include <cstdint>

#include "kernels/cpu/operand.h"

namespace mt {

void rope_tables(float* cos_T, float* sin_T, int64_t T, int64_t Dh, double theta);

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
