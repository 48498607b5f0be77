// flops.cpp — see flops.h.
#include "model/flops.h"

#include <algorithm>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/gated_delta.h"
#include "model/weights.h"

namespace mt {
double flops_per_token(const ModelConfig& c, int64_t seq_len) {
  double attn = 0.0, delta = 0.0;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    if (c.is_delta(l)) {  // chunked recurrence, forward x3 with backward (model/delta_block.h)
      const int64_t C = std::max<int64_t>(1, std::min(c.delta_chunk, seq_len));
      delta += 3.0 * double(c.delta_h()) * gated_delta_flops_per_token(c.delta_dk(), c.delta_dv(), C);
      continue;
    }
    attn += attention_mean_keys(seq_len, c.is_local(l) ? c.window : 0);
  }
  // QK^T and PV are 2 H Dqk + 2 H Dv FLOPs per key forward, x3 with backward (GQA: 12 d_model, exactly).
  const double per_key = 6.0 * double(c.n_heads * (c.qk_head_dim() + c.v_dim()));
  double f = 6.0 * double(active_matmul_params(c)) + per_key * attn + delta;
  if (c.mtp_depth > 0) {  // DeepSeek-V3 2.2: each module runs a projection, one block and the shared head
    const int64_t last = c.n_layers - 1;
    const double keys = attention_mean_keys(seq_len, c.is_local(last) ? c.window : 0);
    f += double(c.mtp_depth) * (6.0 * double(mtp_module_matmul_params(c)) + per_key * keys);
  }
  return f;
}

double flops_per_routed_assignment(const ModelConfig& c) {
  if (c.n_experts == 0) return 0.0;
  return 6.0 * 3.0 * double(c.d_expert) * double(c.expert_in_dim());
}

double step_flops(const ModelConfig& c, int64_t seq_len, double tokens, int64_t dropped) {
  return flops_per_token(c, seq_len) * tokens - double(dropped) * flops_per_routed_assignment(c);
}
}  // namespace mt
