// plan_mtp_test.cpp — multi-token prediction (DeepSeek-V3 section 2.2) in the
// planner: parameters, training FLOPs, parameters and activations on the last
// pipeline stage of a tiny model by hand; the CPU trainer takes it, with the
// parameter count the planner gives.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model/flops.h"
#include "model/weights.h"
#include "plan/activations.h"
#include "plan/memory.h"
#include "plan/model_stats.h"
#include "train/run_config.h"
#include "train/trainer.h"
#include "support/plan_fixtures.h"

namespace mt::plan {
namespace {

// V 1000, D 64, 2 layers, 4 heads of 16 (MHA), SwiGLU 128, tied; one MTP module.
ModelConfig tiny_mtp(int64_t depth) {
  ModelConfig m;
  m.vocab_size = 1000, m.d_model = 64, m.n_layers = 2, m.n_heads = 4, m.n_kv_heads = 4, m.d_ff = 128;
  m.mtp_depth = depth;
  return m;
}

ClusterConfig h100() { return testing::h100_cluster(); }

TEST(PlanMtp, ParametersAndFlopsByHand) {
  // Block like the last layer: attention (4 + 2*4)*16*64 + 64*64 = 16,384, norms 128, SwiGLU 24,576
  // = 41,088; projection 2*64*64 = 8,192 and three norms 192: 49,472 per module.
  const ModelStats s = model_stats(tiny_mtp(1), 32);
  EXPECT_EQ(s.mtp_block.total(), 41088);
  EXPECT_EQ(s.mtp_extra, 8192 + 192);
  EXPECT_EQ(s.mtp_params, 49472);
  EXPECT_EQ(s.total, model_stats(tiny_mtp(0), 32).total + 49472);
  // The main model's active parameters are unchanged; the module's matrices per token are the
  // projection 8,192, the block 40,960 and the shared head 64,000 = 113,152.
  EXPECT_EQ(s.active_matmul, model_stats(tiny_mtp(0), 32).active_matmul);
  EXPECT_EQ(mtp_module_matmul_params(tiny_mtp(1)), 113152);
  // Training FLOPs: main 6 x 145,920 + 12*64 x 33 keys = 900,864; module 6 x 113,152 + 768 x 16.5
  // = 691,584.
  EXPECT_DOUBLE_EQ(flops_per_token(tiny_mtp(0), 32), 900864);
  EXPECT_DOUBLE_EQ(flops_per_token(tiny_mtp(1), 32), 900864 + 691584);
  EXPECT_DOUBLE_EQ(flops_per_token(tiny_mtp(2), 32), 900864 + 2 * 691584);
  // Inference does not run the module.
  EXPECT_DOUBLE_EQ(s.prefill_flops_per_token, model_stats(tiny_mtp(0), 32).prefill_flops_per_token);
}

TEST(PlanMtp, ModuleActivationsByHand) {
  // Per token, bf16, t = 1, flash: mtp.norm_inputs 2*(2*64 + 4) = 264, mtp.projection_input 2*128 = 256,
  // then the block's 788 + 1,028 = 1,816: 2,336.
  ActivationOptions o;
  o.seq_len = 32;
  const auto terms = mtp_module_terms(tiny_mtp(1), o);
  EXPECT_DOUBLE_EQ(activation_bytes_per_token(terms, kRecomputeNothing), 2336);
  EXPECT_EQ(terms[2].op, "mtp.attn_norm.input");
}

TEST(PlanMtp, SitsOnTheLastStage) {
  const ClusterConfig c = h100();
  const ModelStats s0 = model_stats(tiny_mtp(0), 32), s1 = model_stats(tiny_mtp(1), 32);
  // pp = 2: the first stage is unchanged, the last gains the module (t = 1).
  LayoutConfig l;
  l.source = "l.toml", l.gpus = 2, l.pp = 2, l.global_batch = 4, l.zero_stage = 0;
  auto p0 = resolve(l, tiny_mtp(0), 32, c);
  auto p1 = resolve(l, tiny_mtp(1), 32, c);
  ASSERT_TRUE(p0.is_ok() && p1.is_ok());
  EXPECT_DOUBLE_EQ(stage_params(tiny_mtp(1), s1, *p1, 0).dense, stage_params(tiny_mtp(0), s0, *p0, 0).dense);
  EXPECT_DOUBLE_EQ(stage_params(tiny_mtp(1), s1, *p1, 1).dense, stage_params(tiny_mtp(0), s0, *p0, 1).dense + 49472);
  // pp = 1, one micro-batch of 32 tokens: activations + 32 x (2,336 for the module + 4*64 + 4 + 4*1000
  // = 4,260 for its pass through the head: final-norm input and output, statistic, fp32 logits);
  // bf16 weights + 2 x 49,472 bytes.
  l.gpus = 1, l.pp = 1, l.global_batch = 1;
  auto q0 = resolve(l, tiny_mtp(0), 32, c);
  auto q1 = resolve(l, tiny_mtp(1), 32, c);
  ASSERT_TRUE(q0.is_ok() && q1.is_ok());
  const MemoryBreakdown m0 = memory_per_gpu(tiny_mtp(0), s0, *q0, c);
  const MemoryBreakdown m1 = memory_per_gpu(tiny_mtp(1), s1, *q1, c);
  EXPECT_DOUBLE_EQ(m1.activations - m0.activations, 32.0 * (2336 + 4260));
  EXPECT_DOUBLE_EQ(m1.parameters - m0.parameters, 2.0 * 49472);
}

constexpr const char* kTiny = R"(
[model]
vocab_size = 300
d_model = 64
n_layers = 2
n_heads = 4
mtp_depth = 1
[train]
seq_len = 32
batch_size = 1
steps = 1
)";

TEST(PlanMtp, TheTrainerTakesItWithThePlannersParameterCount) {
  auto cfg = parse_run_config(kTiny, "mtp.toml", {});
  ASSERT_TRUE(cfg.is_ok()) << cfg.status().message();
  Status s = check_trainer_limits(*cfg);
  EXPECT_TRUE(s.is_ok()) << s.message();
  ParamLayout L;
  build_layout(cfg->model, L);
  EXPECT_EQ(L.total(), model_stats(cfg->model, 32).total);
  ModelConfig off = cfg->model;
  off.mtp_depth = 0;
  ParamLayout L0;
  build_layout(off, L0);
  EXPECT_EQ(L.total() - L0.total(), model_stats(cfg->model, 32).mtp_params);
}

}  // namespace
}  // namespace mt::plan
