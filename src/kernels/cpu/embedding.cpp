// embedding.cpp — gather forward; backward is a serial scatter-add in token
// order, so repeated tokens always accumulate in the same order.
#include "kernels/cpu/embedding.h"

#include <cstring>

namespace mt {

void embedding_forward(float* x, const int32_t* tokens, const float* table, int64_t N, int64_t D) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) std::memcpy(x + n * D, table + int64_t(tokens[n]) * D, sizeof(float) * D);
}

void embedding_backward(float* dtable, const float* dx, const int32_t* tokens, int64_t N, int64_t D) {
  for (int64_t n = 0; n < N; ++n) {
    float* row = dtable + int64_t(tokens[n]) * D;
    const float* g = dx + n * D;
#pragma omp simd
    for (int64_t d = 0; d < D; ++d) row[d] += g[d];
  }
}

}  // namespace mt
