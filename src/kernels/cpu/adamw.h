// adamw.h — AdamW update over a contiguous range (decoupled weight decay,
// bias-corrected moments). g is multiplied by grad_scale first (clipping).
// The moments are fp32, or bf16 (optim.state_precision = "bf16"): then each
// new moment is rounded stochastically as it is stored, and the step uses
// the moments as stored, so the state alone determines the next step.
#pragma once
#include <cstdint>

#include "core/bf16.h"

namespace mt {

struct AdamWParams {
  float lr, beta1, beta2, eps;
  float weight_decay;  // applied as p -= lr * wd * p (0 for norms/embeddings)
  float grad_scale;
  int64_t step;        // 1-based, for bias correction
};

// Where the random bits of a bf16 state's stochastic rounding come from:
// element i of the range is element `first + i` of the whole parameter
// layout, and its bits are dither_bits(key, first + i) (core/rng.h), so a
// sharded optimizer rounds every element as one process would.
struct StateDither {
  uint32_t key = 0;  // dither_key(step)
  uint64_t first = 0;
};

// Serial over [0, n): callers parallelise over blocks (one parallel region
// for the whole model instead of one per tensor).
// fp32 moments are stored as computed (the dither is ignored); bf16 ones
// take the low 16 dither bits for m, the high 16 for v.
void adamw_update(float* p, float* m, float* v, const float* g, int64_t n, const AdamWParams& a,
                  const StateDither& d = {});
void adamw_update(float* p, bf16* m, bf16* v, const float* g, int64_t n, const AdamWParams& a, const StateDither& d);

}  // namespace mt
