// flops.h — the FLOP count behind every tokens/s -> MFU figure:
//   per token = 6 * active matmul parameters + 6 H (Dqk + Dv) * sum over layers of T_eff
//             + mtp_depth * (6 * MTP module matmul parameters + 6 H (Dqk + Dv) * T_eff of the last layer)
// where T_eff is the mean number of keys a query attends to (window on L
// layers) and Dqk, Dv the per-head q/k and v widths (Dh and Dh for GQA, where
// H Dh = d_model gives the familiar 12 d_model T_eff; Dn + Dr and Dv for MLA).
// Gated-delta ("D") layers have no T_eff term; each adds 3 Hd gated_delta_flops_per_token(Dk, Dv, C)
// (kernels/cpu/gated_delta.h, C = min(delta_chunk, seq_len)) and its W_in, W_o to the matmul parameters.
// Forward + backward, excluding norms, softmax and the optimizer.
// See docs/performance.md.
#pragma once
#include <cstdint>

#include "model/config.h"

namespace mt {
double flops_per_token(const ModelConfig& c, int64_t seq_len);
}  // namespace mt
