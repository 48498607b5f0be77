// model_flops_test.cpp — a step's model FLOPs leave out the expert work of
// the assignments the capacity dropped: one assignment is worth exactly what
// one more top-k slot adds per MoE layer, and a trainer's step counts its
// assignments on that basis (tokens x top_k per MoE layer).
#include <gtest/gtest.h>

#include "model/flops.h"
#include "support/fixtures.h"
#include "train/run_config.h"
#include "train/trainer.h"

namespace mt {
namespace {

int64_t moe_layers(const ModelConfig& c) {
  int64_t n = 0;
  for (int64_t l = 0; l < c.n_layers; ++l) n += c.is_moe(l) ? 1 : 0;
  return n;
}

// One more routed expert per token per MoE layer costs moe_layers x one assignment.
void expect_one_slot_is_one_assignment_per_layer(const ModelConfig& c, int64_t seq_len) {
  ModelConfig fewer = c;
  fewer.top_k = c.top_k - 1;
  const double slot = flops_per_token(c, seq_len) - flops_per_token(fewer, seq_len);
  EXPECT_DOUBLE_EQ(slot, double(moe_layers(c)) * flops_per_routed_assignment(c));
}

TEST(ModelFlops, OneAssignmentIsOneTopKSlotOfOneLayer) {
  ModelConfig c = testing::tiny_moe_config();
  expect_one_slot_is_one_assignment_per_layer(c, 32);
  EXPECT_DOUBLE_EQ(flops_per_routed_assignment(c), 6.0 * 3.0 * 12 * 16);
  c.d_latent = 8;  // latent MoE: the experts work in the latent width
  expect_one_slot_is_one_assignment_per_layer(c, 32);
  EXPECT_DOUBLE_EQ(flops_per_routed_assignment(c), 6.0 * 3.0 * 12 * 8);
}

TEST(ModelFlops, DroppedAssignmentsAreTakenOffTheStep) {
  const ModelConfig c = testing::tiny_moe_config();
  const double tokens = 64;
  EXPECT_DOUBLE_EQ(step_flops(c, 32, tokens, 0), flops_per_token(c, 32) * tokens);
  // Every assignment dropped: the step of a model whose tokens skip the routed experts.
  ModelConfig none = c;
  none.top_k = 0;
  const int64_t all = int64_t(tokens) * c.top_k * moe_layers(c);
  EXPECT_NEAR(step_flops(c, 32, tokens, all), flops_per_token(none, 32) * tokens, 1e-9 * step_flops(c, 32, tokens, 0));
}

// Document masking: the attention work counts the keys the documents
// allowed, so fewer keys are fewer FLOPs, and the causal count of a whole
// sequence (no document boundary) is the unmasked step's.
TEST(ModelFlops, AttentionWorkFollowsTheKeysAttended) {
  const ModelConfig c = testing::tiny_moe_config();
  const int64_t T = 32;
  const double tokens = 2 * T;
  const double causal = 2 * double(T) * double(T + 1) / 2;  // keys of two whole causal sequences
  // One layer kind's keys stand for every layer of that kind; a global-only model counts only "global".
  const double full = step_flops(c, T, tokens, 0, AttentionKeys{causal, causal});
  const double half = step_flops(c, T, tokens, 0, AttentionKeys{causal / 2, causal / 2});
  EXPECT_LT(half, full);
  EXPECT_GT(half, 0.0);
  EXPECT_NEAR(full, step_flops(c, T, tokens, 0), 0.05 * full)
      << "the whole-sequence causal count should be about the dense formula";
}

TEST(ModelFlops, DenseModelHasNoAssignments) {
  ModelConfig c = testing::tiny_moe_config();
  c.n_experts = 0;
  EXPECT_EQ(flops_per_routed_assignment(c), 0.0);
}

// The trainer's step counts one assignment per (token, top-k slot, MoE layer)
// and its FLOPs are the no-drop count less the dropped ones.
TEST(ModelFlops, TrainerStepCountsItsAssignmentsAndTakesOffItsDrops) {
  auto cfg = load_run_config(std::string(MT_SOURCE_DIR) + "/configs/tiny-test.toml",
                             {"model.capacity_factor=0.5", "train.threads=1", "train.steps=2"});
  ASSERT_TRUE(cfg.is_ok()) << cfg.status().message();
  TrainerOptions opt;
  opt.progress = false;
  opt.print_config = false;
  opt.peak_gflops = 1.0;
  auto t = Trainer::create(cfg.value(), opt);
  ASSERT_TRUE(t.is_ok()) << t.status().message();
  const StepResult r = t.value()->train_step();
  const ModelConfig& m = cfg.value().model;
  const TrainConfig& tc = cfg.value().train;
  const int64_t tokens = tc.batch_size * tc.seq_len * tc.grad_accum;
  ASSERT_GT(moe_layers(m), 0);
  EXPECT_EQ(r.assignments, tokens * m.top_k * moe_layers(m));
  EXPECT_GT(r.dropped, 0) << "capacity factor 0.5 must drop";
  EXPECT_DOUBLE_EQ(t.value()->flops_of(r),
                   t.value()->flops_per_step() - double(r.dropped) * flops_per_routed_assignment(m));
  EXPECT_LT(t.value()->flops_of(r), t.value()->flops_per_step());
}

}  // namespace
}  // namespace mt
