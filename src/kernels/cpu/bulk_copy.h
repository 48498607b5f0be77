// bulk_copy.h — whole-buffer copies and fills shared out over the OpenMP
// threads. A step copies or clears the residual stream (tokens x d_model
// floats: 8 MB in moe-512) a few times per layer. Done serially, each such
// memory-bound pass ran on one core at its bandwidth while the others
// waited for the next parallel region. Data movement only: the same bits
// whichever thread moves which range.
#pragma once
#include <cstdint>

namespace mt {

// out[0, n) = in[0, n). Inside a parallel region, or for a short buffer, serial.
void bulk_copy(float* out, const float* in, int64_t n);
// out[0, n) = value, under the same rule.
void bulk_fill(float* out, int64_t n, float value);

}  // namespace mt
