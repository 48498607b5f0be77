// flops.cpp — see flops.h.
#include "model/flops.h"

#include <algorithm>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/gated_delta.h"
#include "model/weights.h"

namespace mt {
namespace {
// Per token: everything but the attention scores and values (matmuls, the
// MTP modules' matmuls, gated-delta layers), and the layers' counts by kind
// (global, local) where T_eff enters, the MTP modules included.
struct FlopParts {
  double fixed = 0.0, per_key = 0.0;
  int64_t global_layers = 0, local_layers = 0;
};
FlopParts flop_parts(const ModelConfig& c, int64_t seq_len) {
  FlopParts p;
  double delta = 0.0;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    if (c.is_delta(l)) {
      const int64_t C = std::max<int64_t>(1, std::min(c.delta_chunk, seq_len));
      delta += 3.0 * double(c.delta_h()) * gated_delta_flops_per_token(c.delta_dk(), c.delta_dv(), C);
      continue;
    }
    ++(c.is_local(l) ? p.local_layers : p.global_layers);
  }
  p.per_key = 6.0 * double(c.n_heads * (c.qk_head_dim() + c.v_dim()));
  p.fixed = 6.0 * double(active_matmul_params(c)) + delta;
  if (c.mtp_depth > 0) {
    p.fixed += double(c.mtp_depth) * 6.0 * double(mtp_module_matmul_params(c));
    (c.is_local(c.n_layers - 1) ? p.local_layers : p.global_layers) += c.mtp_depth;
  }
  return p;
}
}  // namespace

double flops_per_token(const ModelConfig& c, int64_t seq_len, int64_t doc_tokens) {
  const FlopParts p = flop_parts(c, seq_len);
  return p.fixed + p.per_key * (double(p.global_layers) * attention_mean_keys(seq_len, 0, doc_tokens) +
                                double(p.local_layers) * attention_mean_keys(seq_len, c.window, doc_tokens));
}

double flops_per_routed_assignment(const ModelConfig& c) {
  if (c.n_experts == 0) return 0.0;
  return 6.0 * 3.0 * double(c.d_expert) * double(c.expert_in_dim());
}

double step_flops(const ModelConfig& c, int64_t seq_len, double tokens, int64_t dropped) {
  return flops_per_token(c, seq_len) * tokens - double(dropped) * flops_per_routed_assignment(c);
}

double step_flops(const ModelConfig& c, int64_t seq_len, double tokens, int64_t dropped, const AttentionKeys& keys) {
  const FlopParts p = flop_parts(c, seq_len);
  return p.fixed * tokens + p.per_key * (double(p.global_layers) * keys.global + double(p.local_layers) * keys.local) -
         double(dropped) * flops_per_routed_assignment(c);
}
}  // namespace mt
