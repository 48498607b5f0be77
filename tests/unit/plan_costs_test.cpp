// plan_costs_test.cpp — the planner's third pass, each cost against a hand
// calculation from its formula: ZeRO-2 gradients whose memory and traffic
// agree, module recomputation paid in step time, DualPipe pacing and the
// zero-bubble bubbles from the stages each rank holds, flash attention's rate
// by key span, the two MFU conventions (causal half, full square), the SMs
// held by communication kernels and the h800 preset's availability.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "plan/attention_rate.h"
#include "plan/format.h"
#include "plan/memory.h"
#include "plan/model_stats.h"
#include "plan/perf.h"
#include "plan/reliability.h"
#include "support/plan_fixtures.h"

namespace mt::plan {
namespace {

ModelConfig dense(int64_t layers) {
  ModelConfig m;
  m.vocab_size = 4096, m.d_model = 512, m.n_layers = layers, m.n_heads = 8, m.n_kv_heads = 2, m.d_ff = 1024;
  m.tied_embeddings = true;
  return m;
}

Parallel resolved(const LayoutConfig& l, const ModelConfig& m, const ClusterConfig& c, int64_t seq) {
  auto p = resolve(l, m, seq, c);
  EXPECT_TRUE(p.is_ok()) << p.status().message();
  return *p;
}

LayoutConfig layout(int64_t gpus, int64_t global_batch) {
  LayoutConfig l;
  l.source = "l.toml";
  l.gpus = gpus;
  l.global_batch = global_batch;
  return l;
}

// ZeRO-2 holds gradient shards, so it reduce-scatters every micro-batch; with a full buffer it reduces once
// per step and holds every gradient. Eight GPUs of one node, four micro-batches, no overlap.
TEST(PlanCosts, Zero2GradientMemoryAndTrafficAgree) {
  const ModelConfig m = dense(4);
  const ClusterConfig c = testing::h100_cluster(1);
  LayoutConfig l = layout(8, 32);
  l.zero_stage = 2;
  l.dp_overlap = false;
  const ModelStats s = model_stats(m, 1024);
  const Parallel p = resolved(l, m, c, 1024);
  ASSERT_EQ(p.microbatches, 4);
  const double P = stage_params(m, s, p, 0).dense, nvl = 450e9 * 0.8, lat = 4e-6;
  const double rs = 4 * P * 7 / 8 / nvl + lat, ag = 2 * P * 7 / 8 / nvl + lat;  // fp32 gradients, bf16 weights
  const StepTime sharded = step_time(m, s, p, c);
  EXPECT_NEAR(sharded.dp_comm_s, 4 * rs + ag, 1e-12);
  EXPECT_NEAR(sharded.dp_exposed_s, 4 * rs + ag, 1e-12);
  EXPECT_NEAR(memory_per_gpu(m, s, p, c).gradients, 4 * P / 8, 1e-6);
  EXPECT_TRUE(gradients_sharded(l));
  EXPECT_THAT(gradient_sync_text(l), ::testing::HasSubstr("every micro-batch"));

  l.zero2_grads = Zero2Grads::kFull;
  const Parallel pf = resolved(l, m, c, 1024);
  const StepTime full = step_time(m, s, pf, c);
  EXPECT_NEAR(full.dp_comm_s, rs + ag, 1e-12);
  EXPECT_NEAR(memory_per_gpu(m, s, pf, c).gradients, 4 * P, 1e-6);
  EXPECT_THAT(gradient_sync_text(l), ::testing::HasSubstr("once per step"));

  // ZeRO-3 keeping the weights gathered from forward to backward moves the sharded ZeRO-2 traffic plus one
  // gather per micro-batch: never less.
  l.zero_stage = 3;
  l.reshard_after_forward = false;
  const StepTime z3 = step_time(m, s, resolved(l, m, c, 1024), c);
  EXPECT_NEAR(z3.dp_comm_s, 4 * (rs + ag), 1e-12);
  EXPECT_GT(z3.dp_comm_s, sharded.dp_comm_s);
}

// A machine where memory-bound kernels are free: GEMMs and attention at their sustained rates only.
ClusterConfig gemm_only() {
  ClusterConfig c = testing::h100_cluster(1);
  c.eff.gemm_k0 = 0, c.eff.kernel_latency_us = 0, c.device.hbm_tbps = 1e9;
  return c;
}

// Each recomputed module runs its forward again in backward: the QKV GEMM for "qkv", the routed experts'
// gate/up GEMMs for "experts", the norm and SwiGLU element-wise kernels at the HBM rate.
TEST(PlanCosts, ModuleRecomputationCostsItsForward) {
  const ModelConfig m = dense(4);
  const double peak = 989e12, M = 1024, D = 512, H = 8, Hkv = 2, Dh = 64, F = 1024, mb = 2;
  const ModelStats s = model_stats(m, 1024);
  {
    const ClusterConfig c = gemm_only();
    LayoutConfig l = layout(1, 2);
    const StepTime base = step_time(m, s, resolved(l, m, c, 1024), c);
    EXPECT_EQ(base.recompute_s, 0.0);
    l.recompute_modules = {"qkv"};
    const StepTime qkv = step_time(m, s, resolved(l, m, c, 1024), c);
    EXPECT_NEAR(qkv.recompute_s, mb * 4 * 2 * M * D * (H + 2 * Hkv) * Dh / (peak * 0.607), 1e-9);
    EXPECT_GT(qkv.hfu, base.hfu);
    EXPECT_NEAR(qkv.mfu, s.train_flops_per_token * 2048 / (qkv.step_s * peak), 1e-12);
    // Full recomputation repeats the whole layer, and module choices add nothing to it.
    l.recompute = Recompute::kFull;
    const double full = step_time(m, s, resolved(l, m, c, 1024), c).recompute_s;
    l.recompute_modules = {};
    EXPECT_DOUBLE_EQ(step_time(m, s, resolved(l, m, c, 1024), c).recompute_s, full);
  }
  {
    ClusterConfig c = testing::h100_cluster(1);
    c.eff.kernel_latency_us = 0;
    LayoutConfig l = layout(1, 2);
    l.recompute_modules = {"norm", "swiglu"};
    const double hbm = 3.35e12 * 0.8, ew = c.eff.elementwise;
    // Per layer: two RMSNorms (read and write D values, bf16) and the SwiGLU (two F inputs, one output).
    const double want = mb * 4 * (2 * 4 * D * M + 6 * F * M) * ew / hbm;
    EXPECT_NEAR(step_time(m, s, resolved(l, m, c, 1024), c).recompute_s, want, 1e-12);
  }
  {
    ModelConfig moe = dense(2);
    moe.n_experts = 8, moe.top_k = 2, moe.d_expert = 256;
    const ModelStats sm = model_stats(moe, 1024);
    const ClusterConfig c = gemm_only();
    LayoutConfig l = layout(1, 2);
    l.recompute_modules = {"experts"};
    // Dropless, K rows per token: the gate/up GEMMs of 2 M rows, (2 Fe, D) each.
    const double want = mb * 2 * 2 * (2 * M) * 2 * 256 * D / (peak * 0.607);
    EXPECT_NEAR(step_time(moe, sm, resolved(l, moe, c, 1024), c).recompute_s, want, 1e-9);
  }
}

// DualPipe: rank i runs stages i and p-1-i, half the micro-batches each, so the pace is the busier pair's
// mean, not the busiest stage. Stages of 3, 2, 2 and 1 layers (+ head): pairs (0, 3) and (1, 2).
TEST(PlanCosts, DualPipePacedByTheStagesEachRankHolds) {
  const ModelConfig m = dense(8);
  const ClusterConfig c = gemm_only();
  const ModelStats s = model_stats(m, 1024);
  LayoutConfig l = layout(4, 8);
  l.pp = 4, l.schedule = PipeSchedule::kDualPipe, l.first_stage_layers = 3, l.last_stage_layers = 1;
  const Parallel p = resolved(l, m, c, 1024);
  const double peak = 989e12, M = 1024, D = 512, H = 8, Hkv = 2, Dh = 64, F = 1024, V = 4096;
  const double layer_matmul = D * (H + 2 * Hkv) * Dh + D * H * Dh + 3 * D * F;
  const double g = 2 * M * layer_matmul / (peak * 0.607);  // one layer's forward GEMMs
  // Its fused attention, forward: FA2 at a 1K-key span runs at 260 of its 335 TFLOP/s plateau.
  const double a = 4 * M * H * Dh * (M + 1) / 2 / (peak * c.eff.attention * 260 / 335);
  const double layer = 3 * g + 3.5 * a, head = 3 * 2 * M * V * D / (peak * 0.607);
  const StepTime t = step_time(m, s, p, c);
  const double m_b = double(p.microbatches);
  EXPECT_NEAR(t.compute_s, m_b * ((3 * layer + 1 * layer + head) / 2), 1e-6 * t.compute_s);
  // 1F1B on the same stages is paced by stage 0 (3 layers).
  l.schedule = PipeSchedule::k1F1B;
  EXPECT_NEAR(step_time(m, s, resolved(l, m, c, 1024), c).compute_s, m_b * 3 * layer, 1e-6 * t.compute_s);

  // Bubbles from the mean stage: W = the weight-gradient GEMMs, one forward's worth.
  const double W = (8 * g + head / 3) / 4, B = (8 * (2 * g + 2.5 * a) + 2 * head / 3) / 4, FB = (8 * layer + head) / 4;
  EXPECT_NEAR(t.mean_stage_wgrad_s, W, 1e-6 * W);
  EXPECT_NEAR(t.bubble_s, (4.0 / 2 - 1) * (FB + B - 3 * W), 1e-6 * t.bubble_s);
  l.schedule = PipeSchedule::kZeroBubble;
  EXPECT_NEAR(step_time(m, s, resolved(l, m, c, 1024), c).bubble_s, 3 * (FB - 2 * W), 1e-6 * t.bubble_s);
}

// Flash attention's rate by the key span of one call (FlashAttention-3 paper, Figure 5, causal, head dim
// 128 on H100: FA2 191 ... 335 TFLOP/s from 512 to 16K keys, FA3 292 ... 616), interpolated in log2 span;
// ring attention's unmasked steps at the unmasked panel's rate.
TEST(PlanCosts, AttentionRateBySpanAndKernel) {
  EXPECT_DOUBLE_EQ(attention_rate_factor(AttentionKernel::kFa2, 512), 191.0 / 335);
  EXPECT_DOUBLE_EQ(attention_rate_factor(AttentionKernel::kFa2, 16384), 1.0);
  EXPECT_DOUBLE_EQ(attention_rate_factor(AttentionKernel::kFa2, 131072), 1.0);  // held past the table
  EXPECT_DOUBLE_EQ(attention_rate_factor(AttentionKernel::kFa2, 100), 191.0 / 335);
  EXPECT_NEAR(attention_rate_factor(AttentionKernel::kFa2, std::pow(2.0, 11.5)), (298.0 + 319) / 2 / 335, 1e-12);
  EXPECT_DOUBLE_EQ(attention_rate_factor(AttentionKernel::kFa3, 8192), 602.0 / 335);
  // Without the mask (the same figure's other panel: FA2 309 ... 370) the kernel runs faster; ring attention
  // over cp ranks runs one masked and cp - 1 unmasked steps of equal work, so the rates combine harmonically.
  EXPECT_DOUBLE_EQ(attention_rate_factor(AttentionKernel::kFa2, 8192, AttentionMask::kFull), 370.0 / 335);
  EXPECT_NEAR(ring_attention_rate_factor(AttentionKernel::kFa2, 8192, 16), 16 / (335.0 / 333 + 15 * 335.0 / 370),
              1e-12);
  EXPECT_DOUBLE_EQ(ring_attention_rate_factor(AttentionKernel::kFa2, 8192, 1), 333.0 / 335);
  // Ring attention calls the kernel once per K/V block of seq / cp keys; windows and documents cut it.
  EXPECT_DOUBLE_EQ(attention_span(131072, 16, 0, 0), 8192);
  EXPECT_DOUBLE_EQ(attention_span(131072, 16, 4096, 0), 4096);
  EXPECT_DOUBLE_EQ(attention_span(8192, 1, 0, 2000), 2000);

  // One GPU, 8K tokens: the attention part of compute is 3.5 forward FLOPs at the span's rate.
  const ModelConfig m = dense(2);
  const ClusterConfig c = gemm_only();
  const ModelStats s = model_stats(m, 8192);
  LayoutConfig l = layout(1, 1);
  const StepTime fa2 = step_time(m, s, resolved(l, m, c, 8192), c);
  l.attention_kernel = AttentionKernel::kFa3;
  const StepTime fa3 = step_time(m, s, resolved(l, m, c, 8192), c);
  const double peak = 989e12, T = 8192, attn = 2 * 3.5 * 4 * T * 8 * 64 * (T + 1) / 2;
  EXPECT_NEAR(fa2.compute_s - fa3.compute_s,
              attn / (peak * c.eff.attention * 333 / 335) - attn / (peak * c.eff.attention * 602 / 335), 1e-9);
  // Documents of 1K tokens: fewer FLOPs and a slower rate (260 of 335).
  l.attention_kernel = AttentionKernel::kFa2;
  l.document_tokens = 1024;
  const ModelStats sd = model_stats(m, 8192, 1024);
  const StepTime doc = step_time(m, sd, resolved(l, m, c, 8192), c);
  const double attn_doc = 2 * 3.5 * 4 * T * 8 * 64 * (1024 + 1) / 2;
  EXPECT_NEAR(fa2.compute_s - doc.compute_s,
              attn / (peak * c.eff.attention * 333 / 335) - attn_doc / (peak * c.eff.attention * 260 / 335), 1e-9);
  // FlashAttention-3 is a Hopper kernel.
  ClusterConfig a100 = c;
  a100.device = *find_device("A100");
  l.attention_kernel = AttentionKernel::kFa3;
  auto bad = resolve(l, m, 8192, a100);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), ::testing::HasSubstr("memory.attention_kernel"));
}

// MFU is reported over the causal half of the attention square; the full square adds, per token and
// global layer, 6 H (Dqk + Dv) (T - (T + 1) / 2) FLOPs, and both are printed when over 5% apart.
TEST(PlanCosts, MfuConventions) {
  const ModelConfig m = dense(4);
  const int64_t T = 8192;
  const ModelStats s = model_stats(m, T);
  const double extra = 6.0 * 8 * (64 + 64) * 4 * (double(T) - double(T + 1) / 2);
  EXPECT_NEAR(s.train_flops_full_square - s.train_flops_per_token, extra, 1e-6 * extra);
  const ClusterConfig c = testing::h100_cluster(1);
  const StepTime t = step_time(m, s, resolved(layout(1, 1), m, c, T), c);
  EXPECT_NEAR(t.mfu_full_square, t.mfu * s.train_flops_full_square / s.train_flops_per_token, 1e-15);
  EXPECT_EQ(fmtx::mfu(0.434, 1.02), "43.4% causal half");
  EXPECT_EQ(fmtx::mfu(0.434, 1.10), "43.4% causal half (47.7% full square)");
}

// SMs held by communication kernels (parallel.comm_sms; DeepSeek-V3 holds 20 of the H800's 132): every compute
// kernel runs on the other 112, so with no per-kernel latency compute and recomputation take 132/112 as long;
// communication, the peak behind MFU and memory are unchanged. A count at or above the device's SMs, or below
// zero, is refused naming the key.
TEST(PlanCosts, CommunicationSmsSlowCompute) {
  {  // By hand: a dense model on one GPU, GEMMs and attention only, as in the DualPipe case above.
    const ModelConfig m = dense(4);
    const ModelStats s = model_stats(m, 1024);
    const ClusterConfig c = gemm_only();
    LayoutConfig l = layout(1, 2);
    l.comm_sms = 20;
    const double share = 112.0 / 132.0, peak = 989e12, M = 1024, D = 512, H = 8, Hkv = 2, Dh = 64, F = 1024, V = 4096;
    const double g = 2 * M * (D * (H + 2 * Hkv) * Dh + D * H * Dh + 3 * D * F) / (peak * 0.607 * share);
    const double a = 4 * M * H * Dh * (M + 1) / 2 / (peak * c.eff.attention * 260 / 335 * share);
    const double head = 3 * 2 * M * V * D / (peak * 0.607 * share);
    const StepTime t = step_time(m, s, resolved(l, m, c, 1024), c);
    EXPECT_NEAR(t.compute_s, 2 * (4 * (3 * g + 3.5 * a) + head), 1e-6 * t.compute_s);
  }
  ModelConfig m = dense(4);
  m.n_experts = 8, m.top_k = 2, m.d_expert = 256;
  ClusterConfig c = testing::h100_cluster(1);
  c.eff.kernel_latency_us = 0;
  ASSERT_EQ(c.device.sms, 132);
  const ModelStats s = model_stats(m, 1024);
  LayoutConfig l = layout(8, 32);
  l.ep = 8, l.tp = 2, l.ep_overlap = 1.0, l.recompute_modules = {"norm", "qkv"};
  const Parallel p0 = resolved(l, m, c, 1024);
  const StepTime base = step_time(m, s, p0, c);
  l.comm_sms = 20;
  const Parallel p = resolved(l, m, c, 1024);
  const StepTime held = step_time(m, s, p, c);
  EXPECT_NEAR(held.compute_s, base.compute_s * 132 / 112, 1e-12 * held.compute_s);
  EXPECT_NEAR(held.recompute_s, base.recompute_s * 132 / 112, 1e-12 * held.recompute_s);
  EXPECT_GT(base.recompute_s, 0.0);
  EXPECT_GT(base.ep_comm_s, 0.0);
  EXPECT_GT(base.tp_comm_s, 0.0);
  EXPECT_DOUBLE_EQ(held.ep_comm_s, base.ep_comm_s);
  EXPECT_DOUBLE_EQ(held.tp_comm_s, base.tp_comm_s);
  EXPECT_DOUBLE_EQ(held.dp_comm_s, base.dp_comm_s);
  EXPECT_GT(held.step_s, base.step_s);
  EXPECT_NEAR(held.mfu, held.model_flops_per_step / (held.step_s * 989e12 * 8), 1e-12);
  EXPECT_DOUBLE_EQ(memory_per_gpu(m, s, p, c).total(), memory_per_gpu(m, s, p0, c).total());
  EXPECT_DOUBLE_EQ(compute_sm_share(l, c.device), 112.0 / 132.0);
  EXPECT_THAT(comm_sms_text(l, c.device), ::testing::HasSubstr("20 of the H100's 132 SMs"));
  EXPECT_EQ(comm_sms_text(p0.cfg, c.device), "");

  for (int64_t bad : {int64_t(132), int64_t(200), int64_t(-1)}) {
    l.comm_sms = bad;
    auto r = resolve(l, m, 1024, c);
    ASSERT_FALSE(r.is_ok()) << bad;
    EXPECT_THAT(r.status().message(), ::testing::HasSubstr("parallel.comm_sms")) << bad;
  }
  l.comm_sms = 131;  // one SM left to compute
  EXPECT_TRUE(resolve(l, m, 1024, c).is_ok());
  // From files: the key, and the presets' SM counts behind gpu.sms.
  auto parsed = parse_layout("[parallel]\ncomm_sms = -3\n[batch]\nglobal_batch = 8\n", "x.toml");
  ASSERT_FALSE(parsed.is_ok());
  EXPECT_THAT(parsed.status().message(), ::testing::HasSubstr("parallel.comm_sms"));
  auto a100 = parse_cluster("[gpu]\ntype = \"A100\"\n[topology]\nracks = 1\n", "a.toml");
  ASSERT_TRUE(a100.is_ok()) << a100.status().message();
  EXPECT_EQ(a100->device.sms, 108);
  EXPECT_EQ(find_device("H800")->sms, 132);
  EXPECT_EQ(find_device("B200")->sms, 148);
  EXPECT_EQ(find_device("GB200")->sms, 148);
}

// The shipped h800 preset reproduces Llama 3's interruption rate (419 in 54 days on 16,384 GPUs) and, with
// its 8 spare nodes, keeps DeepSeek-V3's PP16 x EP64 layout (1,024-GPU replicas) available: hand-computed
// nodes in repair (Poisson mean) and the chance a spare is free.
TEST(PlanCosts, H800PresetAvailability) {
  auto c = load_cluster(std::string(MT_SOURCE_DIR) + "/configs/clusters/h800.toml");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->job_racks() * c->gpus_per_rack, 2048);
  EXPECT_EQ(c->spare_racks, 8);
  // Llama 3: 16,384 GPUs for 54 days at the preset's per-GPU MTBF give the published count within 2%.
  EXPECT_NEAR(16384.0 * 54 * 24 / c->gpu_mtbf_hours / 419.0, 1.0, 0.02);
  FailureInputs in;
  in.job_gpus = 2048, in.units_used = 256, in.spare_units = c->spare_racks;
  in.gpus_per_unit = in.gpus_needed_per_unit = in.gpus_per_node = 8;
  in.shrink_gpus = 16 * 64;
  in.gpu_mtbf_h = c->gpu_mtbf_hours, in.node_share = c->node_share(), in.repair_h = c->gpu_repair_hours;
  const FailureRates r = failure_rates(in);
  const double rho = 2048.0 / 50000 * 321.0 / 419 * 72;  // nodes in repair on average
  EXPECT_NEAR(r.units_out_mean, rho, 1e-9);
  double free = 0, term = std::exp(-rho);
  for (int k = 0; k <= 7; ++k) free += term, term *= rho / (k + 1);  // P(Poisson(rho) <= 7)
  EXPECT_NEAR(r.p_spare, free, 1e-9);
  EXPECT_GT(r.p_spare, 0.997);  // 99.8%
  EXPECT_GT(r.availability, 0.999);
  // Without the pool, each lost node drops half the job for 72 h: the old preset's 47%.
  in.spare_units = 0;
  EXPECT_LT(failure_rates(in).availability, 0.55);
}

}  // namespace
}  // namespace mt::plan
