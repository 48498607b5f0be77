// plan_config_test.cpp — strict loading of cluster and layout files (every
// preset under configs/ loads; unknown keys, wrong types, out-of-range and
// missing values, unknown GPUs are errors naming file, line and key) and the
// resolution of a layout against a model and a cluster.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "plan/cluster.h"
#include "plan/layout.h"
#include "plan/memory.h"
#include "train/run_config.h"

namespace mt::plan {
namespace {

using ::testing::HasSubstr;

const char* kCluster = R"(
[gpu]
type = "H100"
[topology]
racks = 4
)";

std::string cluster_error(const std::string& text, const std::vector<std::string>& overrides = {}) {
  auto r = parse_cluster(text, "c.toml", overrides);
  EXPECT_FALSE(r.is_ok()) << text;
  return r.is_ok() ? "" : r.status().message();
}

std::string layout_error(const std::string& text) {
  auto r = parse_layout(text, "l.toml");
  EXPECT_FALSE(r.is_ok()) << text;
  return r.is_ok() ? "" : r.status().message();
}

TEST(PlanCluster, PresetSuppliesDefaults) {
  auto c = parse_cluster(kCluster, "c.toml");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->device.type, "H100");
  EXPECT_DOUBLE_EQ(c->device.peak_tflops, 989.0);
  EXPECT_DOUBLE_EQ(c->device.hbm_gib, 80.0);
  EXPECT_DOUBLE_EQ(c->device.nvlink_gbps, 900.0);
  EXPECT_EQ(c->device.gpus_per_domain, 8);
  EXPECT_EQ(c->gpus_per_rack, 8);  // defaults to the NVLink domain
  EXPECT_EQ(c->total_gpus(), 32);
  EXPECT_EQ(c->usable_gpus(), 32);
}

TEST(PlanCluster, FileOverridesPreset) {
  auto c = parse_cluster(std::string(kCluster) + "[efficiency]\ngemm = 0.5\nelementwise = 1.5\n", "c.toml",
                         {"gpu.hbm_gib=96", "topology.spare_racks=1"});
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_DOUBLE_EQ(c->device.hbm_gib, 96.0);
  EXPECT_DOUBLE_EQ(c->eff.gemm, 0.5);
  EXPECT_DOUBLE_EQ(c->eff.elementwise, 1.5);
  EXPECT_DOUBLE_EQ(c->eff.attention, 0.339);  // the H100 preset's (FA2 plateau)
  EXPECT_EQ(c->usable_gpus(), 24);
}

TEST(PlanCluster, SlaSetsUsableGpus) {
  auto c = parse_cluster("[gpu]\ntype = \"GB200\"\n[topology]\nracks = 12\nspare_racks = 1\nsla_min_gpus_up = 64\n",
                         "c.toml");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->gpus_per_rack, 72);
  EXPECT_EQ(c->usable_gpus(), 11 * 64);
}

TEST(PlanCluster, Errors) {
  EXPECT_THAT(cluster_error("[gpu]\ntype = \"Z9000\"\n[topology]\nracks = 1\n"),
              HasSubstr("c.toml:2: gpu.type: unknown GPU \"Z9000\" (known: \"A100\", \"H100\""));
  EXPECT_THAT(cluster_error("[topology]\nracks = 1\n"), HasSubstr("c.toml: gpu.type: required key missing"));
  EXPECT_THAT(cluster_error("[gpu]\ntype = \"H100\"\n"), HasSubstr("c.toml: topology.racks: required key missing"));
  EXPECT_THAT(cluster_error(std::string(kCluster) + "hbm_gb = 3\n"),
              HasSubstr("c.toml:6: topology.hbm_gb: unknown key (did you mean 'gpu.hbm_gib'?)"));
  EXPECT_THAT(cluster_error("[gpu]\ntype = 3\n[topology]\nracks = 1\n"), HasSubstr("c.toml:2: gpu.type: expected string"));
  EXPECT_THAT(cluster_error("[gpu]\ntype = \"H100\"\npeak_bf16_tflops = -5\n[topology]\nracks = 1\n"),
              HasSubstr("c.toml:3: gpu.peak_bf16_tflops: expected float > 0, got -5"));
  EXPECT_THAT(cluster_error("[gpu]\ntype = \"H100\"\n[topology]\nracks = \"four\"\n"),
              HasSubstr("c.toml:4: topology.racks: expected integer in [1, 16777216], got \"four\""));
  EXPECT_THAT(cluster_error("[gpu]\ntype = \"H100\"\n[topology]\nracks = 0\n"),
              HasSubstr("topology.racks: expected integer in [1, 16777216], got 0"));
  EXPECT_THAT(cluster_error("[gpu]\ntype = \"H100\"\n[topology]\nracks = 2\nspare_racks = 2\n"),
              HasSubstr("topology.spare_racks: 2 leaves no rack for the job"));
  EXPECT_THAT(cluster_error("[gpu]\ntype = \"H100\"\n[topology]\nracks = 2\nsla_min_gpus_up = 9\n"),
              HasSubstr("topology.sla_min_gpus_up: 9 exceeds topology.gpus_per_rack = 8"));
  EXPECT_THAT(cluster_error("[gpus]\ntype = \"H100\"\n"), HasSubstr("c.toml:1: gpus: unknown table"));
  EXPECT_THAT(cluster_error(kCluster, {"efficiency.gemm=1.5"}),
              HasSubstr("c.toml: --set efficiency.gemm=1.5: efficiency.gemm: expected float in (0, 1], got 1.5"));
  EXPECT_THAT(cluster_error("[gpu\n"), HasSubstr("c.toml:1:"));
}

TEST(PlanLayout, DefaultsAndEnums) {
  auto l = parse_layout("[parallel]\ntp = 8\npp = 4\npp_schedule = \"interleaved\"\nvirtual_stages = 2\n"
                        "[batch]\nglobal_batch = 64\n[memory]\nrecompute = \"full\"\n[precision]\ngrads = \"bf16\"\n",
                        "l.toml");
  ASSERT_TRUE(l.is_ok()) << l.status().message();
  EXPECT_EQ(l->tp, 8);
  EXPECT_EQ(l->schedule, PipeSchedule::kInterleaved);
  EXPECT_EQ(l->virtual_stages, 2);
  EXPECT_EQ(l->recompute, Recompute::kFull);
  EXPECT_EQ(l->grads, Precision::kBf16);
  EXPECT_EQ(l->params, Precision::kBf16);
  EXPECT_EQ(l->zero_stage, 1);
  EXPECT_EQ(l->micro_batch, 1);
}

TEST(PlanLayout, Errors) {
  EXPECT_THAT(layout_error("[parallel]\ntp = 2\n"), HasSubstr("l.toml: batch.global_batch: required key missing"));
  EXPECT_THAT(layout_error("[batch]\nglobal_batch = 8\n[parallel]\npp_schedule = \"zigzag\"\n"),
              HasSubstr("l.toml:4: parallel.pp_schedule: expected one of \"gpipe\", \"1f1b\""));
  EXPECT_THAT(layout_error("[batch]\nglobal_batch = 8\n[parallel]\nzero_stage = 4\n"),
              HasSubstr("l.toml:4: parallel.zero_stage: expected integer in [0, 3], got 4"));
  EXPECT_THAT(layout_error("[batch]\nglobal_batch = -8\n"), HasSubstr("l.toml:2: batch.global_batch: expected integer in [1, 1099511627776], got -8"));
  EXPECT_THAT(layout_error("[batch]\nglobal_batch = 8\n[parallel]\nvirtual_stages = 2\n"),
              HasSubstr("parallel.virtual_stages: 2 needs parallel.pp_schedule = \"interleaved\""));
  EXPECT_THAT(layout_error("[batch]\nglobal_batch = 8\n[memory]\nfragmentation = 2.0\n"),
              HasSubstr("memory.fragmentation: expected float in [-1, 1]"));
  EXPECT_THAT(layout_error("[batch]\nglobal_batch = 8\n[parallel]\ntp = 2.5\n"),
              HasSubstr("parallel.tp: expected integer in [1, 65536], got 2.5"));
}

ModelConfig moe_model() {
  ModelConfig m;
  m.vocab_size = 1024;
  m.d_model = 256;
  m.n_layers = 8;
  m.n_heads = 8;
  m.n_kv_heads = 2;
  m.n_experts = 16;
  m.top_k = 2;
  m.d_expert = 128;
  return m;
}

std::string resolve_error(const std::string& layout, const ModelConfig& m = moe_model()) {
  auto c = parse_cluster(kCluster, "c.toml");  // 32 H100
  auto l = parse_layout(layout, "l.toml");
  EXPECT_TRUE(c.is_ok() && l.is_ok());
  auto p = resolve(*l, m, 1024, *c);
  EXPECT_FALSE(p.is_ok()) << layout;
  return p.is_ok() ? "" : p.status().message();
}

TEST(PlanLayout, ResolveDerivesCounts) {
  auto c = parse_cluster(kCluster, "c.toml");
  auto l = parse_layout("[parallel]\ntp = 2\npp = 2\nep = 4\n[batch]\nglobal_batch = 64\nmicro_batch = 2\n", "l.toml");
  ASSERT_TRUE(c.is_ok() && l.is_ok());
  auto p = resolve(*l, moe_model(), 1024, *c);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(p->gpus, 32);
  EXPECT_EQ(p->dp, 8);
  EXPECT_EQ(p->edp, 4);  // dp x tp / ep
  EXPECT_EQ(p->microbatches, 4);
  EXPECT_EQ(p->seq_len, 1024);
  EXPECT_EQ(p->tokens_per_step(), 64 * 1024);
  EXPECT_EQ(p->layers_per_stage, 4);
}

// Stages holding only the embedding or only the head (Llama 3 405B: 126 layers on 16 stages with the first
// and last stages one layer short); pp x virtual_stages may then exceed the layers.
TEST(PlanLayout, EmbeddingAndHeadOnlyStages) {
  auto c = parse_cluster(kCluster, "c.toml");  // 32 H100
  ASSERT_TRUE(c.is_ok());
  ModelConfig m = moe_model();  // 8 layers
  auto l = parse_layout("[parallel]\npp = 4\nfirst_stage_layers = 0\nlast_stage_layers = 0\n"
                        "[batch]\nglobal_batch = 64\n", "l.toml");
  ASSERT_TRUE(l.is_ok()) << l.status().message();
  auto p = resolve(*l, m, 1024, *c);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(stage_layers(*p, 8, 0), std::make_pair(int64_t(0), int64_t(0)));  // embedding only
  EXPECT_EQ(stage_layers(*p, 8, 1), std::make_pair(int64_t(0), int64_t(4)));
  EXPECT_EQ(stage_layers(*p, 8, 2), std::make_pair(int64_t(4), int64_t(4)));
  EXPECT_EQ(stage_layers(*p, 8, 3), std::make_pair(int64_t(8), int64_t(0)));  // head only
  EXPECT_EQ(p->layers_per_stage, 4);
  auto li = parse_layout("[parallel]\npp = 4\npp_schedule = \"interleaved\"\nvirtual_stages = 2\n"
                         "first_stage_layers = 0\nlast_stage_layers = 0\n[batch]\nglobal_batch = 64\n", "l.toml");
  ASSERT_TRUE(li.is_ok());
  m.n_layers = 6;  // pp x v = 8 > 6 layers: expressible because the end stages hold none
  auto pi = resolve(*li, m, 1024, *c);
  ASSERT_TRUE(pi.is_ok()) << pi.status().message();
  EXPECT_EQ(stage_layers(*pi, 6, 1).second, 3);
  // One layer short at each end.
  auto l1 = parse_layout("[parallel]\npp = 4\nfirst_stage_layers = 1\nlast_stage_layers = 1\n"
                         "[batch]\nglobal_batch = 64\n", "l.toml");
  m.n_layers = 10;
  auto p1 = resolve(*l1, m, 1024, *c);
  ASSERT_TRUE(p1.is_ok()) << p1.status().message();
  EXPECT_EQ(stage_layers(*p1, 10, 1), std::make_pair(int64_t(1), int64_t(4)));
  EXPECT_EQ(stage_layers(*p1, 10, 3), std::make_pair(int64_t(9), int64_t(1)));
  // Errors name the key.
  m.n_layers = 8;
  EXPECT_THAT(resolve_error("[parallel]\npp = 4\nfirst_stage_layers = 5\nlast_stage_layers = 4\n"
                            "[batch]\nglobal_batch = 64\n", m),
              HasSubstr("parallel.first_stage_layers: the first and last stages hold 9 layers"));
  EXPECT_THAT(resolve_error("[parallel]\nfirst_stage_layers = 0\n[batch]\nglobal_batch = 64\n", m),
              HasSubstr("parallel.first_stage_layers: needs parallel.pp >= 2"));
  EXPECT_THAT(resolve_error("[parallel]\npp = 4\npp_schedule = \"interleaved\"\nvirtual_stages = 5\n"
                            "first_stage_layers = 0\nlast_stage_layers = 0\n[batch]\nglobal_batch = 64\n", m),
              HasSubstr("parallel.virtual_stages: stage 1 holds 4 layers, fewer than the 5 model chunks"));
  // Interleaved with the embedding's and the head's chunks empty (Llama 3 405B: 126 = 16 x 8 - 2): 4 stages
  // x 2 chunks over 6 layers, stages 0 and 3 holding one layer and an empty chunk each.
  m.n_layers = 6;
  auto lc = parse_layout("[parallel]\npp = 4\npp_schedule = \"interleaved\"\nvirtual_stages = 2\n"
                         "first_stage_layers = 1\nlast_stage_layers = 1\n[batch]\nglobal_batch = 64\n", "l.toml");
  ASSERT_TRUE(lc.is_ok());
  auto pc = resolve(*lc, m, 1024, *c);
  ASSERT_TRUE(pc.is_ok()) << pc.status().message();
  EXPECT_EQ(stage_layers(*pc, 6, 0).second, 1);
  EXPECT_EQ(stage_layers(*pc, 6, 1).second, 2);
  // A middle stage has no empty chunk to spare.
  m.n_layers = 8;
  EXPECT_THAT(resolve_error("[parallel]\npp = 4\npp_schedule = \"interleaved\"\nvirtual_stages = 4\n"
                            "first_stage_layers = 3\nlast_stage_layers = 3\n[batch]\nglobal_batch = 64\n", m),
              HasSubstr("parallel.virtual_stages: stage 1 holds 1 layers, fewer than the 4 model chunks that need one"));
}

TEST(PlanLayout, ResolveErrorsNameTheField) {
  EXPECT_THAT(resolve_error("[parallel]\ntp = 3\n[batch]\nglobal_batch = 64\n"),
              HasSubstr("l.toml: parallel.tp x parallel.pp: tp x pp = 3 x 1 = 3 does not divide the 32 GPUs of the job"));
  EXPECT_THAT(resolve_error("[parallel]\ntp = 2\ndp = 4\n[batch]\nglobal_batch = 64\n"),
              HasSubstr("l.toml: parallel.dp: tp x pp x dp = 2 x 1 x 4 = 8 does not match the 32 GPUs"));
  EXPECT_THAT(resolve_error("[parallel]\ntp = 16\ngpus = 16\n[batch]\nglobal_batch = 64\n"),
              HasSubstr("parallel.tp: 16 must divide model.n_heads = 8"));
  EXPECT_THAT(resolve_error("[parallel]\nep = 32\n[batch]\nglobal_batch = 64\n"),
              HasSubstr("parallel.ep: 32 must divide model.n_experts = 16"));
  EXPECT_THAT(resolve_error("[batch]\nglobal_batch = 48\n"),
              HasSubstr("batch.global_batch: 48 sequences must be a multiple of dp x micro_batch = 32 x 1 = 32"));
  EXPECT_THAT(resolve_error("[parallel]\ngpus = 64\n[batch]\nglobal_batch = 64\n"),
              HasSubstr("parallel.gpus: 64 GPUs requested but the cluster has 32"));
  EXPECT_THAT(resolve_error("[parallel]\npp = 16\ngpus = 16\n[batch]\nglobal_batch = 64\n"),
              HasSubstr("parallel.pp: pp x virtual_stages = 16 exceeds model.n_layers = 8"));
  ModelConfig dense = moe_model();
  dense.n_experts = 0;
  EXPECT_THAT(resolve_error("[parallel]\nep = 2\n[batch]\nglobal_batch = 64\n", dense),
              HasSubstr("parallel.ep: expert parallelism needs an MoE model"));
}

TEST(PlanLayout, CpuClusterIsOneProcess) {
  auto c = parse_cluster("[gpu]\ntype = \"cpu\"\n[topology]\nracks = 1\n", "cpu.toml");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  auto two = parse_layout("[parallel]\nep = 2\n[batch]\nglobal_batch = 8\n", "l.toml");
  auto p = resolve(*two, moe_model(), 256, *c);
  ASSERT_FALSE(p.is_ok());
  EXPECT_THAT(p.status().message(), HasSubstr("parallel"));
}

// precision.params = "bf16" on a CPU is the trainer's train.precision = "bf16": fp32 master
// weights plus the GEMMs' bf16 shadow, 6 bytes per parameter against fp32's 4.
TEST(PlanLayout, CpuBf16IsFp32MasterPlusShadow) {
  auto c = parse_cluster("[gpu]\ntype = \"cpu\"\n[topology]\nracks = 1\n", "cpu.toml");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  auto bf16 = parse_layout("[parallel]\ngpus = 1\n[batch]\nglobal_batch = 8\n", "l.toml");
  auto fp32 = parse_layout("[parallel]\ngpus = 1\n[batch]\nglobal_batch = 8\n[precision]\nparams = \"fp32\"\n", "l.toml");
  ASSERT_TRUE(bf16.is_ok() && fp32.is_ok());
  auto pb = resolve(*bf16, moe_model(), 256, *c), pf = resolve(*fp32, moe_model(), 256, *c);
  ASSERT_TRUE(pb.is_ok()) << pb.status().message();
  ASSERT_TRUE(pf.is_ok()) << pf.status().message();
  const ModelStats s = model_stats(moe_model(), 256);
  const MemoryBreakdown mb = memory_per_gpu(moe_model(), s, *pb, *c), mf = memory_per_gpu(moe_model(), s, *pf, *c);
  EXPECT_DOUBLE_EQ(mf.parameters, 4.0 * double(s.total));
  EXPECT_DOUBLE_EQ(mb.parameters, 6.0 * double(s.total));
  EXPECT_DOUBLE_EQ(mb.gradients, mf.gradients);
}

TEST(PlanConfigs, EveryClusterAndLayoutPresetLoads) {
  const std::filesystem::path root = std::filesystem::path(MT_SOURCE_DIR) / "configs";
  int clusters = 0, layouts = 0;
  for (const auto& e : std::filesystem::directory_iterator(root / "clusters")) {
    auto c = load_cluster(e.path().string());
    ASSERT_TRUE(c.is_ok()) << c.status().message();
    ++clusters;
  }
  for (const auto& e : std::filesystem::directory_iterator(root / "layouts")) {
    auto l = load_layout(e.path().string());
    ASSERT_TRUE(l.is_ok()) << l.status().message();
    ++layouts;
  }
  EXPECT_GE(clusters, 6);  // H100, H200, H800, B200, GB200 NVL72, ...
  EXPECT_GE(layouts, 2);
  for (const char* gpu : {"H100", "H200", "H800", "B200", "GB200"}) EXPECT_NE(find_device(gpu), nullptr) << gpu;
  auto nvl = load_cluster((root / "clusters" / "gb200-nvl72.toml").string());
  ASSERT_TRUE(nvl.is_ok());
  EXPECT_EQ(nvl->racks, 12);
  EXPECT_EQ(nvl->spare_racks, 1);
  EXPECT_EQ(nvl->usable_gpus(), 704);
  // The frontier model preset is a trainer config and resolves against its layout.
  auto model = load_run_config((root / "models" / "frontier-moe-1t.toml").string(), {});
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  auto lay = load_layout((root / "layouts" / "frontier-moe-nvl72.toml").string());
  ASSERT_TRUE(lay.is_ok());
  auto p = resolve(*lay, model->model, model->train.seq_len, *nvl);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(p->gpus, 704);
}

}  // namespace
}  // namespace mt::plan
