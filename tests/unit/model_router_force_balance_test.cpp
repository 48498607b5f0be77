// model_router_force_balance_test.cpp — model.router_force_balance, the benchmark
// switch: the logits are uniform draws keyed by (layer, position), so every
// sequence routes alike and the experts get even loads; a step with it drops
// far fewer assignments on the synthetic stream than the fresh router does;
// the router gets no gradient while every other tensor still does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <vector>

#include "kernels/cpu/router.h"
#include "model/transformer.h"
#include "model/weights.h"
#include "support/random.h"
#include "train/run_config.h"

namespace mt {
namespace {

TEST(RouterForceBalance, LogitsAreUniformDrawsByLayerAndPosition) {
  const int64_t T = 64, N = 3 * T, E = 10;  // E not a multiple of a Philox block's four words
  std::vector<float> a(N * E, -1.0f), b(N * E, -1.0f);
  router_random_logits(a.data(), 2, N, E, T);
  router_random_logits(b.data(), 3, N, E, T);
  double mean = 0.0;
  for (float x : a) {
    EXPECT_GE(x, 0.0f);
    EXPECT_LT(x, 1.0f);
    mean += x;
  }
  EXPECT_NEAR(mean / double(a.size()), 0.5, 0.05);
  // Every sequence alike, position by position; another layer draws anew.
  EXPECT_TRUE(std::equal(a.begin(), a.begin() + T * E, a.begin() + 2 * T * E));
  EXPECT_FALSE(std::equal(a.begin(), a.begin() + T * E, b.begin()));
  EXPECT_NE(a[0], a[E]);  // positions differ
  // Each expert is the top choice of about T / E positions.
  std::vector<int> top(E, 0);
  for (int64_t t = 0; t < T; ++t) ++top[std::max_element(a.begin() + t * E, a.begin() + (t + 1) * E) - a.begin() - t * E];
  for (int64_t e = 0; e < E; ++e) EXPECT_LE(top[e], 20) << "expert " << e;
}

ModelConfig model(bool force) {
  auto cfg = load_run_config(std::string(MT_SOURCE_DIR) + "/configs/tiny-test.toml",
                             {"model.capacity_factor=1.0", "model.n_experts=8", "model.top_k=2",
                              force ? "model.router_force_balance=true" : "model.router_force_balance=false"});
  EXPECT_TRUE(cfg.is_ok()) << cfg.status().message();
  return cfg.value().model;
}

TEST(RouterForceBalance, DropsLittleAndLeavesTheRouterWithoutGradient) {
  const int64_t B = 2, T = 64;
  ForwardStats st[2];
  for (bool force : {false, true}) {
    const ModelConfig c = model(force);
    Transformer m(c, B, T, MatmulPrecision::kFp32, LayerActivations::kKeep);
    const int64_t P = m.layout().total();
    std::vector<float> params(static_cast<size_t>(P)), grads(static_cast<size_t>(P), 0.0f);
    init_params(params.data(), m.layout(), c, 5);
    // Few distinct tokens, as in byte text: a fresh router sends them to few experts.
    std::vector<int32_t> tokens(size_t(B * m.tokens_per_sequence()));
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t(testing::rand_u32(3, 0, i) % 6);
    st[force] = m.forward_backward(params.data(), grads.data(), tokens.data(), 1.0f, nullptr);
    for (const LayerOffsets& l : m.offsets().layers) {
      if (!l.moe) continue;
      const float* g = grads.data() + l.moe_w.router;
      const bool all_zero = std::all_of(g, g + c.n_experts * c.d_model, [](float x) { return x == 0.0f; });
      EXPECT_EQ(all_zero, force) << "router gradient with force_balance = " << force;
      const float* gx = grads.data() + l.moe_w.experts[0].w13;
      EXPECT_TRUE(std::any_of(gx, gx + c.d_expert * c.d_model, [](float x) { return x != 0.0f; }));
    }
    EXPECT_TRUE(std::isfinite(st[force].loss));
  }
  ASSERT_EQ(st[0].assignments, st[1].assignments);
  std::cout << "[force balance] dropped " << st[0].dropped << " -> " << st[1].dropped << " of " << st[1].assignments
            << "\n";
  EXPECT_GT(st[0].dropped, 4 * st[1].dropped + 1);
  EXPECT_LT(double(st[1].dropped), 0.15 * double(st[1].assignments));
}

}  // namespace
}  // namespace mt
