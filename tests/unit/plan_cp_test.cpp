// plan_cp_test.cpp — context parallelism (ring attention, Megatron-Core /
// Llama 3) in the planner: GPU count and rank order, divisibility errors, the
// K/V bytes per ring step by hand (2 Hkv Dh tokens bytes), activations and
// optimizer shards divided by cp, the ring's time per step, FLOPs unchanged.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "plan/memory.h"
#include "plan/model_stats.h"
#include "plan/perf.h"
#include "support/plan_fixtures.h"

namespace mt::plan {
namespace {

// V 1000, D 64, 2 layers, 4 heads of 16, 2 KV heads, SwiGLU 128.
ModelConfig tiny() {
  ModelConfig m;
  m.vocab_size = 1000, m.d_model = 64, m.n_layers = 2, m.n_heads = 4, m.n_kv_heads = 2, m.d_ff = 128;
  return m;
}

ClusterConfig h100(int64_t racks) { return testing::h100_cluster(racks); }

LayoutConfig layout(int64_t gpus, int64_t tp, int64_t cp) {
  LayoutConfig l;
  l.source = "l.toml";
  l.gpus = gpus, l.tp = tp, l.cp = cp, l.global_batch = 8, l.zero_stage = 1;
  return l;
}

TEST(PlanCp, GpusAndRankOrder) {
  // 16 GPUs = tp 2 x cp 4 x dp 2; rank order tp, cp, dp: cp strides over tp, the dp x cp gradient
  // group over tp too, 4 of its 8 ranks per 8-GPU node.
  auto p = resolve(layout(16, 2, 4), tiny(), 64, h100(2));
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(p->dp, 2);
  EXPECT_EQ(p->grad_replicas(), 8);
  EXPECT_EQ(p->local_tokens(), 16);  // 64 tokens / cp 4
  const GroupSpans g = group_spans(*p, 8);
  EXPECT_EQ(g.cp.n, 4);
  EXPECT_EQ(g.cp.m, 4);
  EXPECT_TRUE(g.cp_same_domain);
  EXPECT_EQ(g.dp.n, 8);
  EXPECT_EQ(g.dp.m, 4);
  // tp 2 x cp 8 spans two nodes: the ring crosses the scale-out network, with a warning.
  auto wide = resolve(layout(16, 2, 8), tiny(), 64, h100(2));
  ASSERT_TRUE(wide.is_ok()) << wide.status().message();
  EXPECT_FALSE(group_spans(*wide, 8).cp_same_domain);
  EXPECT_THAT(wide->warnings, ::testing::Contains(::testing::HasSubstr("K/V ring")));
}

TEST(PlanCp, ErrorsNameTheKey) {
  // 2 x cp = 8 chunks do not divide 60 tokens.
  auto odd = resolve(layout(16, 2, 4), tiny(), 60, h100(2));
  ASSERT_FALSE(odd.is_ok());
  EXPECT_THAT(odd.status().message(), ::testing::HasSubstr("parallel.cp"));
  auto gpus = resolve(layout(12, 2, 4), tiny(), 64, h100(2));
  ASSERT_FALSE(gpus.is_ok());
  EXPECT_THAT(gpus.status().message(), ::testing::HasSubstr("parallel.cp"));
  ClusterConfig cpu = h100(1);
  cpu.device = *find_device("cpu");
  LayoutConfig one = layout(1, 1, 2);
  one.params = Precision::kFp32;
  auto on_cpu = resolve(one, tiny(), 64, cpu);
  ASSERT_FALSE(on_cpu.is_ok());
  EXPECT_THAT(on_cpu.status().message(), ::testing::HasSubstr("cp"));
}

TEST(PlanCp, KvBytesPerRingStepByHand) {
  // 2 (K and V) x Hkv 2 x Dh 16 x 16 local tokens x 2 bytes = 2,048 per step; t = 2 halves it.
  auto p = resolve(layout(16, 1, 4), tiny(), 64, h100(2));
  ASSERT_TRUE(p.is_ok());
  EXPECT_DOUBLE_EQ(cp_kv_bytes(tiny(), *p), 2.0 * 2 * 16 * 16 * 2);
  auto p2 = resolve(layout(16, 2, 4), tiny(), 64, h100(2));
  EXPECT_DOUBLE_EQ(cp_kv_bytes(tiny(), *p2), 1024);
}

TEST(PlanCp, MemoryDividedByCp) {
  // One GPU against cp 4 on four: activations per GPU / 4 (flash attention: no term grows with keys),
  // weights the same, ZeRO-1 optimizer state sharded over the 4 context-parallel replicas.
  const ClusterConfig c = h100(1);
  LayoutConfig l1 = layout(1, 1, 1), l4 = layout(4, 1, 4);
  l1.global_batch = l4.global_batch = 1;
  auto p1 = resolve(l1, tiny(), 64, c);
  auto p4 = resolve(l4, tiny(), 64, c);
  ASSERT_TRUE(p1.is_ok() && p4.is_ok()) << p4.status().message();
  const ModelStats s = model_stats(tiny(), 64);
  const MemoryBreakdown m1 = memory_per_gpu(tiny(), s, *p1, c), m4 = memory_per_gpu(tiny(), s, *p4, c);
  EXPECT_DOUBLE_EQ(m4.activations, m1.activations / 4);
  EXPECT_DOUBLE_EQ(m4.parameters, m1.parameters);
  EXPECT_DOUBLE_EQ(m4.optimizer_state, m1.optimizer_state / 4);
}

TEST(PlanCp, RingTimeByHand) {
  // Per micro-batch and layer: cp - 1 = 3 steps forward and 3 steps of twice the bytes backward, each a
  // point-to-point message of 2,048 bytes over NVLink: 9 x p2p(2,048). 2 layers, 8 micro-batches (dp 1).
  const ClusterConfig c = h100(1);
  LayoutConfig l = layout(4, 1, 4);
  auto p = resolve(l, tiny(), 64, c);
  ASSERT_TRUE(p.is_ok());
  const ModelStats s = model_stats(tiny(), 64);
  const StepTime t = step_time(tiny(), s, *p, c);
  const Links lk = links_of(c);
  EXPECT_DOUBLE_EQ(t.cp_comm_s, 8 * 2 * (3 * p2p_s(2048, true, lk) + 3 * p2p_s(2048, true, lk) * 2));
  EXPECT_LE(t.cp_exposed_s, t.cp_comm_s);
  EXPECT_GT(t.cp_exposed_s, 0.0);  // tiny attention cannot hide the message latency
  // FLOPs per step do not depend on cp.
  LayoutConfig l1 = layout(1, 1, 1);
  auto p1 = resolve(l1, tiny(), 64, c);
  EXPECT_DOUBLE_EQ(step_time(tiny(), s, *p1, c).model_flops_per_step, t.model_flops_per_step);
}

}  // namespace
}  // namespace mt::plan
