// plan_offload_test.cpp — offload in the planner: optimizer offload and weight
// streaming (memory.offload = "params", ZeRO-Infinity / MemoryX) by hand on a
// tiny model: what leaves the GPU, the layer buffers that stay, the tier's
// capacity, the streamed bytes and their exposure, the optimizer at the store.
#include <gtest/gtest.h>

#include "plan/layout.h"
#include "plan/memory.h"
#include "plan/model_stats.h"
#include "plan/perf.h"
#include "plan/search.h"
#include "support/plan_fixtures.h"

namespace mt::plan {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// V 1000, D 64, 2 layers, 4 heads of 16 (MHA), SwiGLU 128, tied. Per layer: attention 4 x 64 x 64 =
// 16,384, two norms 128, SwiGLU 3 x 128 x 64 = 24,576: 41,088. Embedding 64,000, final norm 64:
// 146,240 in all.
ModelConfig tiny() {
  ModelConfig m;
  m.vocab_size = 1000, m.d_model = 64, m.n_layers = 2, m.n_heads = 4, m.n_kv_heads = 4, m.d_ff = 128;
  return m;
}

ClusterConfig h100() { return testing::h100_cluster(); }

// 8 GPUs of data parallelism, ZeRO-3, bf16 weights (fp32 master), fp32 gradients, AdamW.
LayoutConfig fsdp8(Offload o) {
  LayoutConfig l;
  l.source = "l.toml", l.gpus = 8, l.zero_stage = 3, l.global_batch = 8, l.offload = o;
  return l;
}

struct Planned {
  MemoryBreakdown mem;
  StepTime time;
};

Planned plan_of(const LayoutConfig& l, const ClusterConfig& c = h100()) {
  const ModelConfig m = tiny();
  auto p = resolve(l, m, 32, c);
  EXPECT_TRUE(p.is_ok()) << p.status().message();
  const ModelStats s = model_stats(m, 32);
  return {memory_per_gpu(m, s, *p, c), step_time(m, s, *p, c)};
}

TEST(PlanOffload, ModelIsWhatTheCommentSays) {
  EXPECT_EQ(model_stats(tiny(), 32).total, 146240);
  EXPECT_EQ(layer_params(tiny(), 0).total(), 41088);
}

TEST(PlanOffload, OptimizerOffloadMovesMasterAndMoments) {
  const Planned none = plan_of(fsdp8(Offload::kNone)), opt = plan_of(fsdp8(Offload::kOptimizer));
  const double shard = 146240.0 / 8;  // 18,280 per GPU
  EXPECT_DOUBLE_EQ(none.mem.master_weights, 4 * shard);
  EXPECT_DOUBLE_EQ(none.mem.optimizer_state, 8 * shard);
  EXPECT_EQ(opt.mem.master_weights, 0.0);
  EXPECT_EQ(opt.mem.optimizer_state, 0.0);
  EXPECT_DOUBLE_EQ(opt.mem.offloaded, 12 * shard);
  EXPECT_DOUBLE_EQ(opt.mem.parameters, none.mem.parameters);
  EXPECT_DOUBLE_EQ(opt.mem.offload_capacity, 2048 * kGiB / 8);
  EXPECT_EQ(none.mem.offloaded, 0.0);
}

TEST(PlanOffload, StreamingKeepsOnlyLayerBuffersOnTheGpu) {
  const Planned none = plan_of(fsdp8(Offload::kNone)), st = plan_of(fsdp8(Offload::kParams));
  const double shard = 146240.0 / 8;
  // Everything the GPU held goes to the store: bf16 weights 2, fp32 gradients 4, master 4, moments 8.
  EXPECT_DOUBLE_EQ(st.mem.offloaded, (2 + 4 + 4 + 8) * shard);
  EXPECT_EQ(st.mem.master_weights + st.mem.optimizer_state, 0.0);
  // The GPU keeps (prefetch 1 + 1) buffers of the largest streamed unit, here the embedding (64,000 >
  // 41,088), in bf16, and two fp32 gradient buffers of it.
  EXPECT_DOUBLE_EQ(st.mem.parameters, 2.0 * 2 * 64000);
  EXPECT_DOUBLE_EQ(st.mem.gradients, 2.0 * 4 * 64000);
  // ZeRO-3's gathered-layer and gradient buckets (2 x 2 + 2 x 4 bytes of the largest layer) are those buffers.
  EXPECT_DOUBLE_EQ(none.mem.comm_buffers - st.mem.comm_buffers, 12.0 * 41088);
  EXPECT_DOUBLE_EQ(st.mem.activations, none.mem.activations);
  // Deeper prefetch: one more weight buffer per layer ahead.
  LayoutConfig deep = fsdp8(Offload::kParams);
  deep.prefetch_layers = 3;
  EXPECT_DOUBLE_EQ(plan_of(deep).mem.parameters, 4.0 * 2 * 64000);
}

TEST(PlanOffload, TierCapacityDecidesTheFit) {
  LayoutConfig l = fsdp8(Offload::kParams);
  ClusterConfig c = h100();
  EXPECT_DOUBLE_EQ(plan_of(l, c).mem.offload_capacity, 2048 * kGiB / 8);
  l.offload_tier = OffloadTier::kNvme;
  EXPECT_DOUBLE_EQ(plan_of(l, c).mem.offload_capacity, 30 * 1024 * kGiB / 8);
  // 18 x 18,280 = 329,040 bytes per GPU; a node with 8 x 300,000 bytes of NVMe does not hold it.
  c.nvme_tib = 8 * 300000.0 / (1024 * kGiB);
  const Planned tight = plan_of(l, c);
  EXPECT_LT(tight.mem.total(), tight.mem.capacity);
  EXPECT_FALSE(tight.mem.fits());
  c.nvme_tib = 8 * 330000.0 / (1024 * kGiB);
  EXPECT_TRUE(plan_of(l, c).mem.fits());
}

TEST(PlanOffload, StreamedBytesAndTheirExposure) {
  const double shard = 146240.0 / 8;
  // One micro-batch (8 sequences over dp 8): weights in twice (bf16), gradients out once (fp32), at the
  // host link's 55 GB/s.
  LayoutConfig l = fsdp8(Offload::kParams);
  l.prefetch_layers = 0;
  const Planned serial = plan_of(l);
  const double bytes = 2 * 2 * shard + 4 * shard;
  EXPECT_DOUBLE_EQ(serial.time.stream_s, bytes / 55e9);
  EXPECT_DOUBLE_EQ(serial.time.stream_exposed_s, serial.time.stream_s);  // no prefetch: nothing hides
  l.prefetch_layers = 1;
  const Planned ahead = plan_of(l);
  EXPECT_DOUBLE_EQ(ahead.time.stream_s, serial.time.stream_s);
  const double window = ahead.time.stage_fwd_s + ahead.time.stage_bwd_s;
  EXPECT_DOUBLE_EQ(ahead.time.stream_exposed_s, exposed_s(bytes / 55e9, window, h100().eff.overlap));
  EXPECT_LT(ahead.time.stream_exposed_s, serial.time.stream_exposed_s);
  EXPECT_NEAR(ahead.time.step_s - serial.time.step_s, ahead.time.stream_exposed_s - serial.time.stream_exposed_s, 1e-15);
  // NVMe: the node's 25 GB/s shared by its 8 GPUs, and master weights and moments (12 bytes per
  // parameter) through NVMe both ways at the store's update.
  l.offload_tier = OffloadTier::kNvme;
  const Planned nvme = plan_of(l);
  EXPECT_DOUBLE_EQ(nvme.time.stream_s, bytes / (25e9 / 8));
  EXPECT_NEAR(nvme.time.optimizer_s - ahead.time.optimizer_s, 2 * 12 * shard * 8 / 25e9, 1e-15);
  // The update at the store: 30 bytes per parameter (gradient 4, moments 16, master 8, bf16 weights 2)
  // for the node's 8 GPUs at 500 GB/s of host memory, and the same for optimizer offload, which also
  // moves gradients down and weights up over the host link.
  const Planned opt = plan_of(fsdp8(Offload::kOptimizer));
  EXPECT_NEAR(opt.time.optimizer_s - ahead.time.optimizer_s, (4 + 2) * shard / 55e9, 1e-15);
  EXPECT_EQ(opt.time.stream_s, 0.0);
}

TEST(PlanOffload, CpuClustersRefuseStreaming) {
  ClusterConfig c;
  c.source = "cpu";
  c.device = *find_device("cpu");
  c.eff = c.device.eff;
  c.gpus_per_rack = 1;
  LayoutConfig l;
  l.source = "l.toml", l.gpus = 1, l.global_batch = 1, l.params = Precision::kFp32, l.offload = Offload::kParams;
  auto p = resolve(l, tiny(), 32, c);
  ASSERT_FALSE(p.is_ok());
  EXPECT_NE(p.status().message().find("memory.offload"), std::string::npos) << p.status().message();
}

TEST(PlanOffload, LargestModelWithStreamingIsAtLeastTheBestLayouts) {
  ModelConfig m = tiny();
  m.n_layers = 4, m.d_model = 1024, m.n_heads = 8, m.n_kv_heads = 8, m.d_ff = 4096, m.vocab_size = 32000;
  LayoutConfig l;
  l.source = "l.toml", l.global_batch = 8;
  const LargestModel lm = largest_model_per_domain(m, 1024, h100(), l, FamilyAxis::kLayers);
  ASSERT_TRUE(lm.found && lm.streaming.found);
  EXPECT_GT(lm.streaming.total_params, lm.total_params);
  EXPECT_NE(lm.streaming.best.label.find("stream(host)"), std::string::npos) << lm.streaming.best.label;
  EXPECT_LE(lm.streaming.best.mem.offloaded, lm.streaming.best.mem.offload_capacity);
}

}  // namespace
}  // namespace mt::plan
