// flops.h — the FLOP count behind every tokens/s -> MFU figure:
//   per token = 6 * active matmul parameters + 6 H (Dqk + Dv) * sum over layers of T_eff
//             + mtp_depth * (6 * MTP module matmul parameters + 6 H (Dqk + Dv) * T_eff of the last layer)
// where T_eff is the mean number of keys a query attends to (window on L
// layers) and Dqk, Dv the per-head q/k and v widths (Dh and Dh for GQA, where
// H Dh = d_model gives the familiar 12 d_model T_eff; Dn + Dr and Dv for MLA).
// Gated-delta ("D") layers have no T_eff term; each adds 3 Hd gated_delta_flops_per_token(Dk, Dv, C)
// (kernels/cpu/gated_delta.h, C = min(delta_chunk, seq_len)) and its W_in, W_o to the matmul parameters.
// With document masking T_eff is the keys a query of its document sees
// (attention_mean_keys with doc_tokens, or the keys a step counted).
// Forward + backward, excluding norms, softmax and the optimizer.
// See docs/performance.md.
#pragma once
#include <cstdint>

#include "model/config.h"

namespace mt {
// doc_tokens > 0: rows packed with documents of that many tokens, masked
// (train.document_mask); 0: a row is one sequence.
double flops_per_token(const ModelConfig& c, int64_t seq_len, int64_t doc_tokens = 0);

// One (token, routed expert) assignment's share of that count: 6 x one
// expert's three matrices. An assignment the capacity drops skips its expert
// (the token goes on through the residual), so a step's model FLOPs are the
// count above less this per dropped assignment (step_flops). 0 without
// routed experts.
double flops_per_routed_assignment(const ModelConfig& c);

// The model FLOPs of a step of `tokens` tokens that dropped `dropped`
// assignments: what MFU and the bench divide by. Counting dropped
// assignments as done would credit the step with work it skipped; at a
// fresh router's 40-60% drops that put a bench step above 100% of the peak.
double step_flops(const ModelConfig& c, int64_t seq_len, double tokens, int64_t dropped);

// Keys a step's queries attended, summed over its tokens, by one global and
// one sliding-window layer (ForwardStats::keys_global, keys_local): with
// document masking the attention work is what the documents allowed.
struct AttentionKeys {
  double global = 0, local = 0;
};
// The same with the attention work counted from `keys` (the step's tokens'
// keys) in place of T_eff.
double step_flops(const ModelConfig& c, int64_t seq_len, double tokens, int64_t dropped, const AttentionKeys& keys);
}  // namespace mt
