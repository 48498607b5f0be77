// fixtures.h — the models the unit tests share, so a test names a fixture
// instead of writing out its own copy; the planner's clusters are in
// support/plan_fixtures.h (which includes this).
#pragma once
#include "model/config.h"

namespace mt::testing {

// The small MoE of the distributed-orchestration tests: a dense first layer,
// then MoE layers of 4 experts (top-2) with one shared expert, small enough
// for many forward/backward passes per test.
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

// V 1000, D 64, 2 layers, 4 heads of 16, MHA, SwiGLU 128, tied embeddings:
// small enough to count its parameters by hand.
inline ModelConfig tiny_dense_config() {
  ModelConfig m;
  m.vocab_size = 1000;
  m.d_model = 64;
  m.n_layers = 2;
  m.n_heads = 4;
  m.n_kv_heads = 4;
  m.d_ff = 128;
  return m;
}

}  // namespace mt::testing
