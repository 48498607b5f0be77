// plan_cpu_profile_test.cpp — the measured CPU cluster file (`moetrain doctor
// --write-cluster`): what the writer prints reads back to the same figures,
// bad [cpu] values are refused naming the key, the GEMM fit recovers a known
// model, and the planner's CPU step time on hand-made figures equals a hand
// calculation for a tiny MoE (GEMMs, attention and the kept expert rows; the
// element-wise kernels made free by a huge bandwidth, no kernel latency).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "plan/cluster.h"
#include "plan/cpu_profile.h"
#include "plan/layout.h"
#include "plan/model_stats.h"
#include "plan/perf.h"

namespace mt::plan {
namespace {

using ::testing::HasSubstr;

CpuProfile profile() {
  CpuProfile p;
  p.cpu = "AuthenticAMD family 25 model 17 (AMD EPYC)";
  p.flags = "fma avx2 avx512f avx512_bf16";
  p.bf16_unit = "avx512_bf16";
  p.date = "2026-12-04";
  p.command = "moetrain doctor --write-cluster x.toml";
  p.threads = 2;
  p.fp32.rates = {236.4, 117.3, 0.8731, 77, 37.81, 30.89, 1.27};
  p.bf16.rates = {472.8, 190.2, 0.8119, 93, 62.01, 30.89, 1.31};
  p.fp32.samples = {{"qkv 4096x768x512", {{1, 4096, 768, 512}}, 0.18}};
  p.memory_gbps = 24.26;
  p.ram_gib = 18.33;
  p.kernel_latency_us = 1.58;
  return p;
}

void expect_rates(const CpuRates& got, const CpuRates& want) {
  EXPECT_DOUBLE_EQ(got.peak_gflops, want.peak_gflops);
  EXPECT_DOUBLE_EQ(got.gemm_gflops, want.gemm_gflops);
  EXPECT_DOUBLE_EQ(got.gemm_efficiency, want.gemm_efficiency);
  EXPECT_DOUBLE_EQ(got.gemm_k0, want.gemm_k0);
  EXPECT_DOUBLE_EQ(got.attention_gflops, want.attention_gflops);
  EXPECT_DOUBLE_EQ(got.delta_gflops, want.delta_gflops);
  EXPECT_DOUBLE_EQ(got.experts_factor, want.experts_factor);
}

// A CPU name with quotes and a backslash, a command with a line break (a path may hold one): the file still
// parses, and the name reads back as written.
TEST(PlanCpuProfile, OddCharactersStayInsideTheirStringsAndComments) {
  CpuProfile p = profile();
  p.cpu = "Vendor \"X\" \\ 9";
  p.command = "moetrain doctor --write-cluster a\nb = 1.toml";
  auto c = parse_cluster(cpu_cluster_toml(p), "x.toml");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_THAT(c->name, HasSubstr(p.cpu));
}

TEST(PlanCpuProfile, WrittenFileReadsBack) {
  const CpuProfile p = profile();
  const std::string text = cpu_cluster_toml(p);
  EXPECT_THAT(text, HasSubstr("AuthenticAMD family 25 model 17"));
  EXPECT_THAT(text, HasSubstr("2026-12-04"));
  EXPECT_THAT(text, HasSubstr("moetrain doctor --write-cluster x.toml"));
  EXPECT_THAT(text, HasSubstr("avx512_bf16"));
  auto c = parse_cluster(text, "x.toml");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->device.kind, DeviceKind::kCpu);
  EXPECT_EQ(c->cpu.threads, 2);
  expect_rates(c->cpu.fp32, p.fp32.rates);
  expect_rates(c->cpu.bf16, p.bf16.rates);
  EXPECT_DOUBLE_EQ(c->device.peak_tflops, 0.4728);
  EXPECT_DOUBLE_EQ(c->device.hbm_gib, 18.33);
  EXPECT_DOUBLE_EQ(c->device.hbm_tbps, 0.02426);
  EXPECT_DOUBLE_EQ(c->eff.hbm, 1.0);
  EXPECT_DOUBLE_EQ(c->eff.kernel_latency_us, 1.58);
  EXPECT_EQ(c->total_gpus(), 1);
  // The shipped CPU file, which has no [cpu] section, stays valid and unmeasured.
  auto old = parse_cluster("[gpu]\ntype = \"cpu\"\n[topology]\nracks = 1\n", "old.toml");
  ASSERT_TRUE(old.is_ok()) << old.status().message();
  EXPECT_FALSE(old->cpu.measured());
}

TEST(PlanCpuProfile, BadValuesNameTheKey) {
  const std::string base = cpu_cluster_toml(profile());
  auto refused = [&](const std::string& key, const std::string& value, const std::string& why) {
    auto c = parse_cluster(base, "x.toml", {key + "=" + value});
    ASSERT_FALSE(c.is_ok()) << key << "=" << value;
    EXPECT_THAT(c.status().message(), HasSubstr(key)) << c.status().message();
    EXPECT_THAT(c.status().message(), HasSubstr(why)) << c.status().message();
  };
  refused("cpu.gemm_fp32_gflops", "-1", "x.toml");
  refused("cpu.gemm_bf16_efficiency", "7", "cpu.gemm_bf16_efficiency");
  refused("cpu.gemm_fp32_k0", "-3", "cpu.gemm_fp32_k0");
  refused("cpu.attention_fp32_gflops", "0", "must be > 0 when cpu.gemm_fp32_gflops is given");
  refused("cpu.peak_bf16_gflops", "0", "must be > 0 when cpu.gemm_bf16_gflops is given");
  refused("cpu.threads", "\"two\"", "cpu.threads");
  {
    auto c = parse_cluster(base, "x.toml", {"cpu.gemm_fp32_gflopz=3"});
    ASSERT_FALSE(c.is_ok());
    EXPECT_THAT(c.status().message(), HasSubstr("cpu.gemm_fp32_gflopz"));
  }
  auto gpu = parse_cluster("[gpu]\ntype = \"H100\"\n[topology]\nracks = 1\n[cpu]\ngemm_fp32_gflops = 100\n", "h.toml");
  ASSERT_FALSE(gpu.is_ok());
  EXPECT_THAT(gpu.status().message(), HasSubstr("cpu.gemm_fp32_gflops"));
  EXPECT_THAT(gpu.status().message(), HasSubstr("gpu.type = \"cpu\""));
}

TEST(PlanCpuProfile, FitRecoversAKnownRateModel) {
  // Products timed exactly as rate 100 GFLOP/s x 0.8 x K / (K + 40) would run them.
  std::vector<GemmSample> s = {{"a", {{1, 4096, 768, 512}}, 0},
                               {"b", {{1, 4096, 512, 64}}, 0},
                               {"c", {{16, 512, 704, 512}, {16, 512, 512, 352}}, 0},
                               {"d", {{1, 4096, 8192, 256}}, 0}};
  const GemmFit truth{0.8, 40, 0};
  for (GemmSample& x : s) x.seconds = predicted_gemm_s(x, 100, truth);
  const GemmFit f = fit_gemm_rate(s, 100);
  EXPECT_DOUBLE_EQ(f.k0, 40);
  EXPECT_NEAR(f.efficiency, 0.8, 1e-12);
  EXPECT_NEAR(f.rms_log_error, 0, 1e-12);
  EXPECT_NEAR(predicted_gemm_s(s[0], 100, truth), 3 * 2.0 * 4096 * 768 * 512 * (552.0 / 512) / 80e9, 1e-15);
}

// A tiny MoE on one CPU: every GEMM at gemm x efficiency x K / (K + k0), attention at its measured rate
// (3.5 x the forward FLOPs), the experts on the rows routed (top-k per token, not the capacity's slots) at
// their measured factor over the GEMM rate.
TEST(PlanCpuProfile, StepTimeByHand) {
  ModelConfig m;
  m.vocab_size = 256, m.d_model = 64, m.n_layers = 2, m.n_heads = 4, m.n_kv_heads = 1;
  m.n_experts = 4, m.d_expert = 32, m.top_k = 2, m.capacity_factor = 1.25;
  m.tied_embeddings = true;
  const int64_t seq = 32;
  CpuProfile prof = profile();
  prof.fp32.rates = {200, 100, 0.5, 16, 10, 0, 1.5};  // the experts' grouped products 1.5x the fitted time
  prof.bf16.rates = {400, 300, 0.5, 16, 20, 0, 2.0};
  prof.kernel_latency_us = 0;
  prof.memory_gbps = 1e15;  // element-wise kernels and the optimizer: free
  auto c = parse_cluster(cpu_cluster_toml(prof), "hand.toml");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  LayoutConfig l;
  l.source = "cpu.toml";
  l.gpus = 1, l.micro_batch = 2, l.global_batch = 2;
  for (Precision prec : {Precision::kFp32, Precision::kBf16}) {
    l.params = prec;
    auto p = resolve(l, m, seq, *c);
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    const CpuRates& r = prec == Precision::kFp32 ? prof.fp32.rates : prof.bf16.rates;
    const double rate = r.gemm_gflops * 1e9 * r.gemm_efficiency, k0 = r.gemm_k0;
    auto gt = [&](double M, double N, double K) { return 2 * M * N * K * (K + k0) / K / rate; };
    const double M = 2 * 32, D = 64, H = 4, Hkv = 1, Dh = 16, E = 4, F = 32, V = 256;
    const double rows_e = M * 2 / E;  // top-2 of 4 experts, evenly
    const double layer = gt(M, (H + 2 * Hkv) * Dh, D) + gt(M, D, H * Dh) + gt(M, E, D) +
                         r.experts_factor * E * (gt(rows_e, 2 * F, D) + gt(rows_e, D, F));
    const double attn = 3.5 * 4 * M * H * Dh * (32 + 1) / 2.0 / (r.attention_gflops * 1e9);
    const double head = gt(M, V, D);
    const StepTime t = step_time(m, model_stats(m, seq), *p, *c);
    const double want = 2 * (3 * layer + attn) + 3 * head;
    EXPECT_NEAR(t.compute_s, want, 1e-6 * want);
    EXPECT_NEAR(t.step_s, want, 1e-6 * want);
    EXPECT_NEAR(t.mfu, t.model_flops_per_step / (t.step_s * r.peak_gflops * 1e9), 1e-12);
  }
  // A file measured in fp32 only cannot plan a bf16 step.
  ClusterConfig fp32_only = *c;
  fp32_only.cpu.bf16 = {};
  l.params = Precision::kBf16;
  auto p = resolve(l, m, seq, fp32_only);
  ASSERT_FALSE(p.is_ok());
  EXPECT_THAT(p.status().message(), HasSubstr("precision.params"));
  EXPECT_THAT(p.status().message(), HasSubstr("cpu.gemm_bf16_gflops"));
}

}  // namespace
}  // namespace mt::plan
