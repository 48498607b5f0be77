// flops.h — the FLOP count behind every tokens/s -> MFU figure:
//   per token = 6 * active matmul parameters + 12 * d_model * sum over layers of T_eff
// where T_eff is the mean number of keys a query attends to (window on L
// layers). Forward + backward, excluding norms, softmax and the optimizer.
// See docs/performance.md.
#pragma once
#include <cstdint>

#include "model/config.h"

namespace mt {
double flops_per_token(const ModelConfig& c, int64_t seq_len);
}  // namespace mt
