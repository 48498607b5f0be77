// tiny_moe.h — the small MoE model the distributed-orchestration tests run:
// a dense first layer, then MoE layers of 4 experts (top-2) with one shared
// expert, small enough for many forward/backward passes per test.
#pragma once
#include "model/config.h"

namespace mt::testing {

inline ModelConfig tiny_moe_config() {
  ModelConfig c;
  c.vocab_size = 41;
  c.d_model = 16;
  c.n_layers = 3;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.d_ff = 24;
  c.n_experts = 4;
  c.top_k = 2;
  c.d_expert = 12;
  c.n_shared_experts = 1;
  c.n_dense_layers = 1;
  c.init_std = 0.3;
  return c;
}

}  // namespace mt::testing
