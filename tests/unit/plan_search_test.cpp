// plan_search_test.cpp — the layout sweep (only fitting layouts, best MFU
// first) and the largest model per NVLink domain (it fits, one size up does
// not, and what binds is named), plus make_plan's run-level figures (steps,
// days, GPU-hours, interruptions, the spare-rack trade) and its JSON contract.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "plan/plan.h"
#include "plan/search.h"

namespace mt::plan {
namespace {

using ::testing::HasSubstr;

ModelConfig moe() {
  ModelConfig m;
  m.vocab_size = 32768, m.d_model = 2048, m.n_layers = 16, m.n_heads = 16, m.n_kv_heads = 4;
  m.n_experts = 64, m.top_k = 4, m.d_expert = 1024, m.n_shared_experts = 1;
  m.tied_embeddings = false;
  return m;
}

ClusterConfig nvl72() {
  auto c = parse_cluster("[gpu]\ntype = \"GB200\"\n[topology]\nracks = 4\nspare_racks = 1\nsla_min_gpus_up = 64\n"
                         "[reliability]\nrack_mtbf_hours = 2000\n",
                         "nvl72.toml");
  EXPECT_TRUE(c.is_ok()) << c.status().message();
  return *c;
}

LayoutConfig base_layout() {
  LayoutConfig l;
  l.source = "l.toml";
  l.ep = 8;
  l.global_batch = 192 * 4;
  return l;
}

TEST(PlanSearch, SweepKeepsFittingLayoutsBestFirst) {
  const ModelConfig m = moe();
  const ModelStats s = model_stats(m, 4096);
  const auto opts = sweep_layouts(m, s, 4096, nvl72(), base_layout(), 192);
  ASSERT_GT(opts.size(), 5u);
  for (size_t i = 0; i < opts.size(); ++i) {
    EXPECT_TRUE(opts[i].mem.fits()) << opts[i].label;
    EXPECT_EQ(opts[i].par.gpus, 192);
    if (i > 0) {
      EXPECT_GE(opts[i - 1].time.mfu, opts[i].time.mfu);
    }
  }
}

TEST(PlanSearch, LargestModelPerDomain) {
  const ModelConfig m = moe();
  const ClusterConfig c = nvl72();
  const LargestModel r = largest_model_per_domain(m, 4096, c, base_layout(), FamilyAxis::kExperts);
  ASSERT_TRUE(r.found);
  EXPECT_EQ(r.gpus, 64);  // the SLA minimum of one 72-GPU rack
  EXPECT_TRUE(r.best.mem.fits());
  EXPECT_FALSE(r.next_mem.fits());
  EXPECT_GT(r.next_params, r.total_params);
  EXPECT_EQ(r.model.n_experts % 8, 0);
  EXPECT_THAT(r.binding, HasSubstr("capacity 186.0 GiB"));
  // Physical bound: fully sharded bf16 weights + fp32 master + AdamW cost 16 bytes per parameter over 64 GPUs.
  EXPECT_LT(double(r.total_params) * 16.0 / 64.0, 186.0 * 1024 * 1024 * 1024);
  EXPECT_GT(double(r.total_params) * 16.0 / 64.0, 0.5 * 186.0 * 1024 * 1024 * 1024);
  // Depth as the knob gives a model that also fits.
  const LargestModel d = largest_model_per_domain(m, 4096, c, base_layout(), FamilyAxis::kLayers);
  ASSERT_TRUE(d.found);
  EXPECT_TRUE(d.best.mem.fits());
}

// The plain-FSDP answer is never larger than the best one (its layouts are a subset of those searched), and
// the assumptions stated with both are the ones their layouts were evaluated under (one search: they are slow).
TEST(PlanSearch, PlainFsdpSideBySideWithItsAssumptions) {
  LayoutConfig l = base_layout();
  l.micro_batch = 2;
  l.optimizer = OptimizerKind::kMuon;
  const LargestModel r = largest_model_per_domain(moe(), 4096, nvl72(), l, FamilyAxis::kExperts);
  ASSERT_TRUE(r.found);
  ASSERT_TRUE(r.fsdp.found);
  EXPECT_LE(r.fsdp.total_params, r.total_params);
  const Parallel& f = r.fsdp.best.par;
  EXPECT_EQ(f.tp, 1);
  EXPECT_EQ(f.pp, 1);
  EXPECT_EQ(f.ep, 1);
  EXPECT_EQ(f.cfg.zero_stage, 3);
  EXPECT_TRUE(r.fsdp.best.mem.fits());
  EXPECT_FALSE(r.fsdp.next_mem.fits());
  const SearchAssumptions& a = r.assumptions;
  EXPECT_EQ(a.seq_len, 4096);
  EXPECT_EQ(a.micro_batch, 2);
  EXPECT_EQ(a.optimizer, OptimizerKind::kMuon);
  EXPECT_EQ(a.state_bytes_per_param, 2.0 + 4.0 + 4.0 + 4.0);  // bf16 weights, fp32 grads and master, one moment
  for (const LargestFit* fit : {static_cast<const LargestFit*>(&r), &r.fsdp}) {
    const Parallel& q = fit->best.par;
    EXPECT_EQ(q.seq_len, a.seq_len);
    EXPECT_EQ(q.micro_batch, a.micro_batch);
    EXPECT_EQ(q.global_batch, q.dp * a.micro_batch * a.microbatches_per_stage * q.pp);
    EXPECT_NE(std::find(a.recompute.begin(), a.recompute.end(), q.cfg.recompute), a.recompute.end());
    EXPECT_EQ(q.cfg.params, a.params);
    EXPECT_EQ(q.cfg.grads, a.grads);
    EXPECT_EQ(q.cfg.optimizer, a.optimizer);
    EXPECT_EQ(fit->best.mem.capacity, a.capacity_bytes);
    EXPECT_EQ(allocator_overhead(q.cfg), a.allocator_overhead);
    EXPECT_EQ(q.gpus, r.gpus);
  }
}

PlanInputs inputs() {
  PlanInputs in;
  in.model = moe();
  in.model_source = "moe";
  in.model_seq_len = 4096;
  in.cluster = nvl72();
  in.layout = base_layout();
  in.tokens = 1e12;
  in.search = SearchMode::kNone;
  in.sweep_layouts = false;
  return in;
}

TEST(PlanRun, DaysGpuHoursAndFailures) {
  auto p = make_plan(inputs());
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(p->par.gpus, 3 * 64);
  EXPECT_EQ(p->steps, int64_t(std::ceil(1e12 / (768.0 * 4096))));
  EXPECT_NEAR(p->days, double(p->steps) * p->time.step_s / 86400, 1e-9);
  EXPECT_NEAR(p->gpu_hours, p->days * 24 * 192, 1e-6);
  // Job MTBF from 192 GPUs at 50,000 h each and 3 racks at 2,000 h each.
  EXPECT_NEAR(p->rel.mtbf_s, 3600.0 / (192.0 / 50000 + 3.0 / 2000), 1e-6);
  EXPECT_NEAR(p->rel.expected_interruptions, p->days * 86400 / p->rel.checkpoint_goodput / p->rel.mtbf_s, 1e-9);
  EXPECT_NEAR(p->rel.goodput, p->rel.checkpoint_goodput * p->rel.rates.availability, 1e-12);
  EXPECT_NEAR(p->rel.wall_days, p->days / p->rel.goodput, 1e-9);
  // The trade: 4 racks with 1 spare vs with none.
  ASSERT_GE(p->rel.spares.size(), 2u);
  const SpareOption& zero = p->rel.spares[0];
  const SpareOption& one = p->rel.spares[1];
  EXPECT_EQ(zero.spare_racks, 0);
  EXPECT_EQ(zero.gpus, 256);
  EXPECT_TRUE(one.configured);
  EXPECT_GT(one.availability, zero.availability);
  EXPECT_LT(zero.compute_days, one.compute_days);
}

// Every spare option is a layout the batch allows: dp x micro_batch divides the global batch, dp x tp is a
// multiple of ep, and the GPUs are tp x pp x dp.
TEST(PlanRun, SpareOptionsDivideTheBatch) {
  PlanInputs in = inputs();
  in.layout.global_batch = 3 * 7 * 64;  // 1344: dp 192 divides it, 256 does not
  in.layout.micro_batch = 2;
  auto c = parse_cluster("[gpu]\ntype = \"H100\"\n[topology]\nracks = 40\n", "h100.toml");
  ASSERT_TRUE(c.is_ok());
  in.cluster = *c;
  in.layout.gpus = 224;  // of 320
  in.layout.pp = 2;      // dp 112 divides the 672 micro-batches; 160 (all 40 nodes) would not
  auto p = make_plan(in);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  ASSERT_GE(p->rel.spares.size(), 3u);
  bool configured = false;
  for (const SpareOption& o : p->rel.spares) {
    EXPECT_EQ((in.layout.global_batch / in.layout.micro_batch) % o.dp, 0) << o.dp;
    EXPECT_EQ((o.dp * p->par.tp) % p->par.ep, 0) << o.dp;
    EXPECT_EQ(o.gpus, o.dp * p->par.tp * p->par.pp);
    EXPECT_LE(o.racks_used + o.spare_racks, 40);
    EXPECT_GE(o.racks_used * 8, o.gpus);
    EXPECT_TRUE(std::isfinite(o.effective_days));
    configured |= o.configured;
  }
  EXPECT_TRUE(configured);
}

// A job on exactly the nodes it needs, no spares, at every size: days stay finite and sensible.
TEST(PlanRun, NoSparesAtAnySizeStaysSensible) {
  for (int64_t nodes : {1, 16, 256, 2048, 16384}) {
    PlanInputs in = inputs();
    auto c = parse_cluster(fmt::format("[gpu]\ntype = \"H100\"\n[topology]\nracks = {}\n", nodes), "h100.toml");
    ASSERT_TRUE(c.is_ok());
    in.cluster = *c;
    in.layout.ep = 8;
    in.layout.tp = 8;
    in.layout.global_batch = 8 * nodes;
    in.model.n_layers = 8;
    auto p = make_plan(in);
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    const Reliability& r = p->rel;
    EXPECT_EQ(r.rates.p_spare, 0.0);
    EXPECT_TRUE(std::isfinite(r.wall_days)) << nodes;
    // Llama 3 rates at 16K GPUs: one interruption every ~3 h; shrinking by a node keeps most of the job.
    // 131,072 GPUs fail every 23 min and a restart takes 10: a third of the time goes to restarts.
    EXPECT_GT(r.goodput, nodes == 1 ? 0.99 : nodes <= 2048 ? 0.9 : 0.5) << nodes;
    EXPECT_LT(r.wall_days, 2.0 * p->days) << nodes;
    EXPECT_GT(r.rates.availability, 0.98) << nodes;  // shrinking by one 8-GPU replica costs little
    for (const SpareOption& o : r.spares) {
      EXPECT_TRUE(std::isfinite(o.days_wait)) << nodes;
      EXPECT_LT(o.days_wait, 1000.0 * o.compute_days) << nodes;  // waiting 72 h per loss, no spare: slow, finite
      EXPECT_LE(o.days_shrink, o.days_wait * (1 + 1e-12)) << nodes;
    }
  }
}

TEST(PlanRun, DenseModelsShowNoExpertFields) {
  PlanInputs in = inputs();
  in.model.n_experts = 0, in.model.top_k = 0, in.model.n_shared_experts = 0, in.model.d_ff = 4096;
  in.layout.ep = 1;
  auto p = make_plan(in);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const nlohmann::json j = to_json(*p);
  EXPECT_FALSE(j["layout"].contains("expert_dp"));
  EXPECT_FALSE(j["layout"].contains("ep"));
  EXPECT_THAT(to_text(*p), ::testing::Not(HasSubstr("expert")));
  EXPECT_THAT(to_html(*p), ::testing::Not(HasSubstr("expert dp")));
  // The MoE model keeps them.
  auto q = make_plan(inputs());
  ASSERT_TRUE(q.is_ok());
  EXPECT_TRUE(to_json(*q)["layout"].contains("expert_dp"));
  EXPECT_THAT(to_text(*q), HasSubstr("expert dp"));
}

TEST(PlanRun, JsonContract) {
  auto p = make_plan(inputs());
  ASSERT_TRUE(p.is_ok());
  const nlohmann::json j = to_json(*p);
  for (const char* key : {"memory_per_gpu_bytes", "step_time_s", "mfu", "days", "gpu_hours", "expected_interruptions",
                          "checkpoint_interval_s", "goodput"}) {
    ASSERT_TRUE(j.contains(key)) << key;
    EXPECT_TRUE(j[key].is_number()) << key;
    EXPECT_GT(j[key].get<double>(), 0.0) << key;
  }
  EXPECT_NEAR(j["memory_per_gpu_bytes"].get<double>(), p->mem.total(), 0.5);
  EXPECT_TRUE(j["memory_per_gpu_bytes"].is_number_integer());
  EXPECT_LT(j["mfu"].get<double>(), 1.0);
  EXPECT_LE(j["goodput"].get<double>(), 1.0);
  EXPECT_TRUE(j["memory"].contains("optimizer_state"));
  EXPECT_TRUE(j["inference"].contains("kv_cache_bytes_per_token"));
  const std::string html = to_html(*p);
  EXPECT_THAT(html, HasSubstr("<svg"));
  EXPECT_THAT(html, HasSubstr("Memory per GPU"));
  EXPECT_THAT(to_text(*p), HasSubstr("Memory/GPU"));
}

TEST(PlanRun, BadTokens) {
  PlanInputs in = inputs();
  in.tokens = -1;
  auto p = make_plan(in);
  ASSERT_FALSE(p.is_ok());
  EXPECT_THAT(p.status().message(), HasSubstr("--tokens: must be > 0"));
}

}  // namespace
}  // namespace mt::plan
