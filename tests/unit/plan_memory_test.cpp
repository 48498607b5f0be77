// plan_memory_test.cpp — parameter counts (against the trainer's ParamLayout),
// the memory items per GPU on hand-computable cases (ZeRO stages, TP/PP/EP
// splits, recomputation, pipeline in-flight counts), KV-cache and FLOP
// figures, and the CPU path: the planner's activation figure equals what the
// trainer's Transformer allocates, with and without layer recomputation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <malloc.h>

#include "kernels/cpu/attention.h"
#include "model/transformer.h"
#include "model/weights.h"
#include "plan/memory.h"
#include "plan/model_stats.h"
#include "plan/perf.h"
#include "model/flops.h"
#include "train/run_config.h"
#include "support/plan_fixtures.h"

namespace mt::plan {
namespace {

ModelConfig tiny_dense() { return testing::tiny_dense_config(); }

ClusterConfig h100(int64_t racks) { return testing::h100_cluster(racks); }

Parallel resolved(const ModelConfig& m, const LayoutConfig& l, const ClusterConfig& c, int64_t seq) {
  auto p = resolve(l, m, seq, c);
  EXPECT_TRUE(p.is_ok()) << p.status().message();
  return *p;
}

LayoutConfig layout(int64_t gpus, int64_t zero, int64_t global_batch) {
  LayoutConfig l;
  l.source = "l.toml";
  l.gpus = gpus;
  l.zero_stage = zero;
  l.global_batch = global_batch;
  return l;
}

TEST(PlanModelStats, ParamCountsMatchTheTrainerLayout) {
  std::vector<ModelConfig> configs = {tiny_dense()};
  ModelConfig moe = tiny_dense();
  moe.n_experts = 8, moe.top_k = 2, moe.d_expert = 32, moe.n_shared_experts = 1, moe.n_dense_layers = 1;
  moe.n_layers = 3, moe.qk_norm = true, moe.moe_out_norm = true, moe.tied_embeddings = false;
  configs.push_back(moe);
  ModelConfig latent = moe;
  latent.d_latent = 16, latent.layer_pattern = "LG", latent.n_kv_heads = 2, latent.n_kv_heads_local = 1;
  configs.push_back(latent);
  for (const ModelConfig& c : configs) {
    ParamLayout L;
    build_layout(c, L);
    const ModelStats s = model_stats(c, 64);
    EXPECT_EQ(s.total, L.total());
    EXPECT_EQ(s.active_matmul, active_matmul_params(c));
    EXPECT_DOUBLE_EQ(s.train_flops_per_token, flops_per_token(c, 64));
  }
  // Hand count of the tiny dense model.
  const ModelStats s = model_stats(tiny_dense(), 64);
  const int64_t per_layer = (4 + 8) * 16 * 64 + 64 * 64 + 2 * 64 + 3 * 128 * 64;
  EXPECT_EQ(s.total, 1000 * 64 + 2 * per_layer + 64);
}

TEST(PlanModelStats, MeanKeysClosedFormMatchesTheKernel) {
  for (int64_t T : {1, 7, 64, 300})
    for (int64_t w : {0, 1, 5, 64, 500}) {
      EXPECT_NEAR(mean_keys(T, w), attention_mean_keys(T, w), 1e-9) << T << " " << w;
      for (int64_t L : {1, 3, 16, 64, 1000})  // packed documents, document-masked
        EXPECT_NEAR(mean_keys(T, w, L), attention_mean_keys(T, w, L), 1e-9) << T << " " << w << " " << L;
    }
}

TEST(PlanModelStats, DocumentMaskingCountsTheKeysOfEachDocument) {
  const ModelConfig c = tiny_dense();
  EXPECT_DOUBLE_EQ(model_stats(c, 4096, 256).train_flops_per_token, flops_per_token(c, 4096, 256));
  EXPECT_LT(model_stats(c, 4096, 256).train_flops_per_token, model_stats(c, 4096).train_flops_per_token);
  EXPECT_DOUBLE_EQ(model_stats(c, 4096, 4096).train_flops_per_token, model_stats(c, 4096).train_flops_per_token);
}

TEST(PlanModelStats, KvCacheAndInferenceFlops) {
  ModelConfig m = tiny_dense();
  m.n_layers = 4;
  m.layer_pattern = "LLLG";
  m.window = 16;
  m.n_kv_heads = 2;
  m.n_kv_heads_local = 1;
  const ModelStats s = model_stats(m, 64);
  // K and V, bf16, Dh = 16: local layers 1 KV head, the global layer 2.
  EXPECT_DOUBLE_EQ(s.kv_bytes_per_token, 3 * (2 * 1 * 16 * 2) + (2 * 2 * 16 * 2));
  EXPECT_DOUBLE_EQ(s.kv_bytes_per_sequence, 3 * (2 * 1 * 16 * 2) * 16.0 + (2 * 2 * 16 * 2) * 64.0);
  // Decode at context 64: each local layer attends 16 keys, the global one 64.
  EXPECT_DOUBLE_EQ(s.decode_flops_per_token, 2.0 * double(s.active_matmul) + 4.0 * 64 * (3 * 16 + 64));
  EXPECT_DOUBLE_EQ(s.prefill_flops_per_token,
                   2.0 * double(s.active_matmul) + 4.0 * 64 * (3 * mean_keys(64, 16) + mean_keys(64, 0)));
}

TEST(PlanMemory, StatesOnOneGpu) {
  const ModelConfig m = tiny_dense();
  const ModelStats s = model_stats(m, 32);
  const double N = double(s.total);
  const Parallel p = resolved(m, layout(1, 1, 2), h100(1), 32);
  const MemoryBreakdown mem = memory_per_gpu(m, s, p, h100(1));
  EXPECT_DOUBLE_EQ(mem.parameters, 2 * N);       // bf16
  EXPECT_DOUBLE_EQ(mem.gradients, 4 * N);        // fp32
  EXPECT_DOUBLE_EQ(mem.master_weights, 4 * N);   // fp32 master
  EXPECT_DOUBLE_EQ(mem.optimizer_state, 8 * N);  // AdamW m, v
  EXPECT_DOUBLE_EQ(mem.capacity, 80.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(mem.runtime, 1024.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(mem.comm_buffers, 0.0);  // no process group larger than one
  EXPECT_DOUBLE_EQ(mem.fragmentation, 0.02 * mem.activations);  // expandable segments (layout.h)
  EXPECT_NEAR(mem.total(), mem.parameters + mem.gradients + mem.master_weights + mem.optimizer_state +
                               mem.activations + mem.runtime + mem.fragmentation, 1e-3);
}

TEST(PlanMemory, ZeroStagesShardOverDataParallel) {
  const ModelConfig m = tiny_dense();
  const ModelStats s = model_stats(m, 32);
  const double N = double(s.total);
  struct Case {
    int64_t zero;
    double params, grads, master, opt;
  };
  for (const Case& k : {Case{0, 2 * N, 4 * N, 4 * N, 8 * N}, Case{1, 2 * N, 4 * N, 4 * N / 8, 8 * N / 8},
                        Case{2, 2 * N, 4 * N / 8, 4 * N / 8, 8 * N / 8}, Case{3, 2 * N / 8, 4 * N / 8, 4 * N / 8, 8 * N / 8}}) {
    const Parallel p = resolved(m, layout(8, k.zero, 8), h100(1), 32);
    const MemoryBreakdown mem = memory_per_gpu(m, s, p, h100(1));
    EXPECT_NEAR(mem.parameters, k.params, 1e-6) << k.zero;
    EXPECT_NEAR(mem.gradients, k.grads, 1e-6) << k.zero;
    EXPECT_NEAR(mem.master_weights, k.master, 1e-6) << k.zero;
    EXPECT_NEAR(mem.optimizer_state, k.opt, 1e-6) << k.zero;
  }
  // ZeRO-3 without reshard-after-forward (FSDP SHARD_GRAD_OP): the whole gathered bf16 weights are kept from
  // forward to backward on top of the shard, and each micro-batch gathers once instead of twice.
  LayoutConfig keep = layout(8, 3, 8);
  keep.reshard_after_forward = false;
  const Parallel pk = resolved(m, keep, h100(1), 32);
  EXPECT_NEAR(memory_per_gpu(m, s, pk, h100(1)).parameters, 2 * N / 8 + 2 * N, 1e-6);
  const Parallel pr = resolved(m, layout(8, 3, 8), h100(1), 32);
  const StepTime tk = step_time(m, s, pk, h100(1)), tr = step_time(m, s, pr, h100(1));
  // dp_comm = m (ag + ag + rs) vs m (ag + rs), m = 1 micro-batch: the difference is one gather of the bf16 weights.
  EXPECT_NEAR(tr.dp_comm_s - tk.dp_comm_s, all_gather_s(2 * N, group_spans(pr, 8).dp, links_of(h100(1))), 1e-12);
  // Offloading the optimizer leaves no master weights or moments on the GPU.
  LayoutConfig off = layout(8, 1, 8);
  off.offload = Offload::kOptimizer;
  const MemoryBreakdown mo = memory_per_gpu(m, s, resolved(m, off, h100(1), 32), h100(1));
  EXPECT_EQ(mo.master_weights, 0.0);
  EXPECT_EQ(mo.optimizer_state, 0.0);
}

TEST(PlanMemory, ActivationsByHand) {
  const ModelConfig m = tiny_dense();  // D 64, H = Hkv = 4, Dh 16, F 128, V 1000
  const ModelStats s = model_stats(m, 32);
  LayoutConfig l = layout(1, 1, 2);
  l.micro_batch = 2;
  const Parallel p = resolved(m, l, h100(1), 32);
  // Per token per layer: attention 2D + 4 + 2D + 2(H + 2Hkv)Dh + 2 H Dh + 4H; FFN 2D + 4 + 2D + 4F + 2F.
  const double attn = 128 + 4 + 128 + 2 * 12 * 16 + 2 * 64 + 16;
  const double ffn = 128 + 4 + 128 + 4 * 128 + 2 * 128;
  EXPECT_DOUBLE_EQ(layer_activation_bytes_per_token(m, 0, p), attn + ffn);
  const double tokens = 64, head = (4 * 64 + 4 + 4 * 1000) * tokens;
  const MemoryBreakdown mem = memory_per_gpu(m, s, p, h100(1));
  EXPECT_DOUBLE_EQ(mem.activations_by_recompute[0], 2 * (attn + ffn) * tokens + head);
  EXPECT_DOUBLE_EQ(mem.activations_by_recompute[1], mem.activations_by_recompute[0]);  // flash: nothing to drop
  EXPECT_DOUBLE_EQ(mem.activations_by_recompute[2], 2 * 128 * tokens + (attn + ffn) * tokens + head);
  EXPECT_DOUBLE_EQ(mem.activations, mem.activations_by_recompute[0]);
  // Without flash attention the probabilities (2 bytes x H x keys) are stored in place of the logsumexp
  // (4H), and selective recompute drops them.
  l.flash_attention = false;
  const Parallel q = resolved(m, l, h100(1), 32);
  EXPECT_DOUBLE_EQ(layer_activation_bytes_per_token(m, 0, q), attn + ffn - 16 + 2 * 4 * 32);
  const MemoryBreakdown mq = memory_per_gpu(m, s, q, h100(1));
  // Selective recomputation then keeps q, k, v and no logsumexp: the flash figure less 4H per token and layer.
  EXPECT_DOUBLE_EQ(mq.activations_by_recompute[1], mem.activations_by_recompute[0] - 2 * 16 * tokens);
}

TEST(PlanMemory, TensorParallelSplitsAndReplicatesKvHeads) {
  ModelConfig m = tiny_dense();
  m.n_kv_heads = 1;  // GQA 4:1
  LayoutConfig l = layout(4, 1, 1);
  l.tp = 4;
  const Parallel p = resolved(m, l, h100(1), 32);
  // KV heads replicated up to tp: Hkv' = 4 per 4 ranks = 1 each.
  const double attn = (128 + 4 + 128 + 2 * (4 + 2 * 4) * 16 + 2 * 64 + 16) / 4.0;
  const double ffn = (128 + 4 + 128 + 4 * 128 + 2 * 128) / 4.0;
  EXPECT_DOUBLE_EQ(layer_activation_bytes_per_token(m, 0, p), attn + ffn);
}

TEST(PlanMemory, MoeCapacityRowsAndExpertParallelism) {
  ModelConfig m = tiny_dense();
  m.n_experts = 8, m.top_k = 2, m.d_expert = 32, m.capacity_factor = 1.25;
  const int64_t seq = 32;  // capacity = ceil(1.25 * 32 * 2 / 8) = 10 slots: 80 rows per 32 tokens = 2.5 per token
  LayoutConfig l = layout(8, 1, 8);
  l.ep = 8;
  const Parallel p = resolved(m, l, h100(1), seq);
  const double D = 64, E = 8, K = 2, F = 32, rows = 2.5;
  const double attn = 128 + 4 + 128 + 2 * 12 * 16 + 2 * 64 + 16;
  const double moe = 4 * D + 4 + 8 * E + 8 * K + rows * (2 * D + 4 * F + 2 * F + 2 * D);
  EXPECT_DOUBLE_EQ(layer_activation_bytes_per_token(m, 0, p), attn + moe);
  const ModelStats s = model_stats(m, seq);
  const MemoryBreakdown mem = memory_per_gpu(m, s, p, h100(1));
  // Dispatch send + receive buffers of one layer: 2 x rows x Din x 2 bytes per token.
  EXPECT_DOUBLE_EQ(mem.moe_capacity_buffers, 2 * 2 * rows * D * seq);
  // One expert per GPU; experts sharded by ZeRO-1 over expert dp = dp x tp / ep = 1.
  const double experts = double(s.expert_params) / 8, dense = double(s.total - s.expert_params);
  EXPECT_NEAR(mem.parameters, 2 * (dense + experts), 1e-6);
  EXPECT_NEAR(mem.optimizer_state, 8 * (dense / 8 + experts / 1), 1e-6);
}

TEST(PlanMemory, PipelineInFlightMicrobatches) {
  ModelConfig m = tiny_dense();
  m.n_layers = 16;
  LayoutConfig l = layout(4, 1, 8);  // m = 8 micro-batches
  l.pp = 4;
  for (auto [sched, v, first, last] : std::vector<std::tuple<PipeSchedule, int64_t, double, double>>{
           {PipeSchedule::k1F1B, 1, 4, 1},
           {PipeSchedule::kGpipe, 1, 8, 8},
           {PipeSchedule::kZeroBubble, 1, 4, 1},
           {PipeSchedule::kInterleaved, 2, 4 * (1 + 3.0 / 8), (4 + 1) / 2.0},  // Korthikanti: p (1 + (p-1)/(p v))
           {PipeSchedule::kDualPipe, 1, 5, 5}}) {
    l.schedule = sched;
    l.virtual_stages = v;
    const Parallel p = resolved(m, l, h100(1), 32);
    EXPECT_DOUBLE_EQ(in_flight_microbatches(p, 0), first) << to_string(sched);
    EXPECT_DOUBLE_EQ(in_flight_microbatches(p, 3), last) << to_string(sched);
  }
  EXPECT_EQ(stage_layers(10, 4, 0), std::make_pair(int64_t(0), int64_t(3)));
  EXPECT_EQ(stage_layers(10, 4, 2), std::make_pair(int64_t(6), int64_t(2)));
}

// DualPipe: rank i holds stage i and stage pp-1-i, their weights and their gradients; the two holders of a
// stage split its optimizer update (DeepSeek-V3 report, Table 2: 2x parameters).
TEST(PlanMemory, DualPipeCountsBothStagesGradients) {
  ModelConfig m = tiny_dense();
  m.n_layers = 16;
  m.tied_embeddings = false;
  const ModelStats s = model_stats(m, 32);
  LayoutConfig l = layout(4, 1, 8);
  l.pp = 4;
  const ClusterConfig c = h100(1);
  const Parallel one = resolved(m, l, c, 32);
  l.schedule = PipeSchedule::kDualPipe;
  const Parallel dual = resolved(m, l, c, 32);
  const MemoryBreakdown m1 = memory_per_gpu(m, s, one, c);
  const MemoryBreakdown md = memory_per_gpu(m, s, dual, c);
  ASSERT_TRUE(md.stage == 0 || md.stage == 3);  // stages 0 and 3 hold the embedding and the head
  const StageParams a = stage_params(m, s, one, 0), b = stage_params(m, s, one, 3);
  const double held = a.dense + b.dense;
  EXPECT_NEAR(md.parameters, 2.0 * held, 1e-6);           // bf16 weights of both stages
  EXPECT_NEAR(md.gradients, 4.0 * held, 1e-6);            // fp32 gradients of both stages, not of one
  EXPECT_NEAR(md.master_weights, 4.0 * held / 2, 1e-6);   // dp 1: each holder updates half
  EXPECT_NEAR(md.optimizer_state, 8.0 * held / 2, 1e-6);
  EXPECT_GT(md.gradients, 1.5 * m1.gradients);
}

// The CPU trainer's configs: the planner's activation figure is the trainer's allocation.
TEST(PlanMemory, CpuActivationsEqualTheTrainersAllocation) {
  // Batch 1 keeps the bench presets' buffers near 200 MB.
  for (const char* preset : {"quickstart.toml", "tiny-test.toml", "bench/moe-512.toml", "bench/moe-512-mla.toml",
                             "bench/moe-512-mtp.toml", "bench/dense-512.toml"}) {
    auto run = load_run_config(std::string(MT_SOURCE_DIR) + "/configs/" + preset,
                               {std::string(preset).rfind("bench/", 0) == 0 ? "train.batch_size=1" : "train.steps=1"});
    ASSERT_TRUE(run.is_ok()) << run.status().message();
    const ModelConfig& c = run->model;
    const int64_t B = run->train.batch_size, T = run->train.seq_len;
    const ClusterConfig cpu = one_cpu_cluster("cpu");
    LayoutConfig l = layout(1, 0, B);
    l.micro_batch = B;
    l.params = Precision::kFp32;
    const Parallel p = resolved(c, l, cpu, T);
    const MemoryBreakdown mem = memory_per_gpu(c, model_stats(c, T), p, cpu);

    const size_t before = mallinfo2().uordblks + mallinfo2().hblkhd;
    Transformer model(c, B, T, MatmulPrecision::kFp32);
    const size_t after = mallinfo2().uordblks + mallinfo2().hblkhd;
    EXPECT_EQ(int64_t(mem.activations), model.activation_bytes()) << preset;
    // Independent check: the heap grew by that much (plus the parameter layout's bookkeeping).
    const double grown = double(after) - double(before);
    EXPECT_GE(grown, mem.activations) << preset;
    EXPECT_LE(grown, mem.activations * 1.01 + 4e6) << preset;
    ParamLayout L;
    build_layout(c, L);
    EXPECT_DOUBLE_EQ(mem.parameters, 4.0 * double(L.total()));
    EXPECT_DOUBLE_EQ(mem.optimizer_state, 8.0 * double(L.total()));

    // recompute = "full" is the trainer's layer recomputation (train.activation_checkpointing = "layers").
    LayoutConfig lr = l;
    lr.recompute = Recompute::kFull;
    const MemoryBreakdown full = memory_per_gpu(c, model_stats(c, T), resolved(c, lr, cpu, T), cpu);
    const size_t before_r = mallinfo2().uordblks + mallinfo2().hblkhd;
    Transformer recomputing(c, B, T, MatmulPrecision::kFp32, LayerActivations::kRecompute);
    const size_t after_r = mallinfo2().uordblks + mallinfo2().hblkhd;
    EXPECT_EQ(int64_t(full.activations), recomputing.activation_bytes()) << preset;
    EXPECT_LT(full.activations, mem.activations) << preset;
    EXPECT_GE(double(after_r) - double(before_r), full.activations) << preset;
    EXPECT_LE(double(after_r) - double(before_r), full.activations * 1.01 + 4e6) << preset;
  }
}

}  // namespace
}  // namespace mt::plan
