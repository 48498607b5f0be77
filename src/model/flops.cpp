// flops.cpp — see flops.h.
#include "model/flops.h"

#include "kernels/cpu/attention.h"
#include "model/weights.h"

namespace mt {
double flops_per_token(const ModelConfig& c, int64_t seq_len) {
  double attn = 0.0;
  for (int64_t l = 0; l < c.n_layers; ++l)
    attn += attention_mean_keys(seq_len, c.is_local(l) ? c.window : 0);
  // H * Dh == d_model: QK^T and PV are 2 * 2 * Dh * H FLOPs per key forward, x3 with backward.
  return 6.0 * double(active_matmul_params(c)) + 12.0 * double(c.d_model) * attn;
}
}  // namespace mt
