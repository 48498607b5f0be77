// embedding.h — token embedding lookup. x (N, D) = table[tokens[n]]; table (V, D).
#pragma once
#include <cstdint>

namespace mt {
void embedding_forward(float* x, const int32_t* tokens, const float* table, int64_t N, int64_t D);
// dtable (V, D) += scattered dx rows, in token order (deterministic).
void embedding_backward(float* dtable, const float* dx, const int32_t* tokens, int64_t N, int64_t D);
}  // namespace mt
