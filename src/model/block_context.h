// block_context.h — what every block's forward/backward needs besides its
// own activations: config, batch geometry, precision, and the flat buffers
// (params read, grads accumulated) addressed by the offsets in weights.h.
#pragma once
#include <cstdint>

#include "kernels/cpu/gemm.h"
#include "model/config.h"

namespace mt {

struct BlockContext {
  const ModelConfig* c = nullptr;
  int64_t B = 0, T = 0, N = 0;  // N = B * T tokens
  MatmulPrecision prec = MatmulPrecision::kFp32;
  const float* P = nullptr;  // parameters
  float* G = nullptr;        // gradients (accumulated)
  const float* rope_cos = nullptr;  // (T, Dh/2)
  const float* rope_sin = nullptr;

  const float* p(int64_t off) const { return P + off; }
  float* g(int64_t off) const { return G + off; }
};

}  // namespace mt
