// model_activation_recompute_test.cpp — layer recomputation (activation
// checkpointing, model/transformer.h): keeping only each layer's input and
// recomputing its forward before its backward gives bit-identical losses,
// router statistics and gradients to keeping every activation, on dense,
// MoE with sliding windows, gated-delta and multi-token-prediction models,
// with gradient accumulation; the activation figure shrinks, the count-only
// sizing equals the allocation in both modes, switching modes on a live
// model gives the recomputing model's buffers, and with recomputation a
// layer costs only its input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "core/threads.h"
#include "model/transformer.h"
#include "model/weights.h"
#include "support/random.h"
#include "train/run_config.h"

namespace mt {
namespace {

ModelConfig model(const std::vector<std::string>& sets) {
  std::vector<std::string> all = {"model.n_layers=6"};
  all.insert(all.end(), sets.begin(), sets.end());
  auto cfg = load_run_config(std::string(MT_SOURCE_DIR) + "/configs/tiny-test.toml", all);
  EXPECT_TRUE(cfg.is_ok()) << cfg.status().message();
  return cfg.value().model;
}

struct Case {
  const char* name;
  std::vector<std::string> sets;
};

const Case kCases[] = {
    {"moe", {}},
    {"dense", {"model.n_experts=0", "model.d_ff=96"}},
    {"moe_windows", {"model.layer_pattern=\"LLG\"", "model.window=5"}},
    {"gated_delta", {"model.layer_pattern=\"DDL\"", "model.window=5"}},
    {"mtp", {"model.mtp_depth=1"}},
};

TEST(LayerRecompute, GradientsAreBitIdenticalToKeptActivations) {
  set_num_threads(2);
  const int64_t B = 2, T = 16;
  for (const Case& k : kCases) {
    const ModelConfig c = model(k.sets);
    Transformer keep(c, B, T, MatmulPrecision::kFp32, LayerActivations::kKeep);
    Transformer recompute(c, B, T, MatmulPrecision::kFp32, LayerActivations::kRecompute);
    EXPECT_LT(recompute.activation_bytes(), keep.activation_bytes()) << k.name;
    const int64_t P = keep.layout().total();
    std::vector<float> params(static_cast<size_t>(P));
    init_params(params.data(), keep.layout(), c, 5);
    const int64_t S = keep.tokens_per_sequence();
    std::vector<int32_t> tokens(static_cast<size_t>(2 * B * S));
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t(testing::rand_u32(17, 0, i) % uint32_t(c.vocab_size));
    std::vector<float> bias(size_t(std::max<int64_t>(1, keep.n_moe_layers() * c.n_experts)));
    for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.01f * float(testing::rand_u32(17, 1, i) % 5);
    const float* router_bias = c.n_experts > 0 ? bias.data() : nullptr;
    std::vector<float> ga(size_t(P), 0.0f), gb(size_t(P), 0.0f);
    for (int micro = 0; micro < 2; ++micro) {  // gradient accumulation: the second pass adds onto the first
      const int32_t* tk = tokens.data() + micro * B * S;
      const ForwardStats a = keep.forward_backward(params.data(), ga.data(), tk, 0.5f, router_bias);
      const ForwardStats b = recompute.forward_backward(params.data(), gb.data(), tk, 0.5f, router_bias);
      EXPECT_EQ(a.loss, b.loss) << k.name;
      EXPECT_EQ(a.total_loss, b.total_loss) << k.name;
      EXPECT_EQ(a.aux_loss, b.aux_loss) << k.name;
      EXPECT_EQ(a.dropped, b.dropped) << k.name;
      EXPECT_EQ(a.expert_load, b.expert_load) << k.name;
    }
    EXPECT_EQ(0, std::memcmp(ga.data(), gb.data(), ga.size() * sizeof(float))) << k.name;
    double norm = 0.0;
    for (float g : ga) norm += double(g) * double(g);
    EXPECT_GT(norm, 0.0) << k.name;
  }
}

TEST(LayerRecompute, CountOnlySizingEqualsTheAllocationAndSwitchingModesMatchesIt) {
  const int64_t B = 2, T = 16;
  for (const Case& k : kCases) {
    const ModelConfig c = model(k.sets);
    for (LayerActivations mode : {LayerActivations::kKeep, LayerActivations::kRecompute}) {
      Transformer m(c, B, T, MatmulPrecision::kFp32, mode);
      EXPECT_EQ(m.activation_bytes(), Transformer::activation_bytes(c, B, T, MatmulPrecision::kFp32, mode)) << k.name;
    }
    Transformer live(c, B, T, MatmulPrecision::kFp32, LayerActivations::kKeep);
    live.set_layer_activations(LayerActivations::kRecompute);
    EXPECT_EQ(live.activation_bytes(), Transformer::activation_bytes(c, B, T, MatmulPrecision::kFp32, LayerActivations::kRecompute)) << k.name;
    // A sixth layer of a shape already present costs only its input (B*T*D floats) when recomputing,
    // and its whole activation set when keeping.
    ModelConfig five = c;
    five.n_layers = 5;
    const int64_t layer_input = int64_t(sizeof(float)) * B * T * c.d_model;
    EXPECT_EQ(Transformer::activation_bytes(c, B, T, MatmulPrecision::kFp32, LayerActivations::kRecompute) -
                  Transformer::activation_bytes(five, B, T, MatmulPrecision::kFp32, LayerActivations::kRecompute),
              layer_input)
        << k.name;
    EXPECT_GT(Transformer::activation_bytes(c, B, T, MatmulPrecision::kFp32, LayerActivations::kKeep) -
                  Transformer::activation_bytes(five, B, T, MatmulPrecision::kFp32, LayerActivations::kKeep),
              3 * layer_input)
        << k.name;
  }
}

}  // namespace
}  // namespace mt
