// fixtures.h — the models and clusters the unit tests share, so a test
// names a fixture instead of writing out its own copy: the tiny MoE of the
// distributed-orchestration tests (support/tiny_moe.h), a tiny dense model
// and an H100 cluster for the planner's arithmetic.
#pragma once
#include <cstdint>

#include "model/config.h"
#include "plan/cluster.h"
#include "support/tiny_moe.h"

namespace mt::testing {

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

// `racks` nodes of 8 H100s, the device's default efficiencies.
inline plan::ClusterConfig h100_cluster(int64_t racks = 1) {
  plan::ClusterConfig c;
  c.source = "test";
  c.device = *plan::find_device("H100");
  c.eff = c.device.eff;
  c.gpus_per_rack = 8;
  c.racks = racks;
  return c;
}

}  // namespace mt::testing
