// plan_activations_test.cpp — activation memory op by op (plan/activations.h)
// against hand calculations for a tiny dense and a tiny MoE layer, against
// Korthikanti et al. 2022's published formulas, against the bytes the CPU
// trainer allocates, the allocator overhead, and the two published 80 GB
// layouts (Llama 3 405B, DeepSeek-V3) declared to fit while oversized ones do not.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "kernels/cpu/moe_dispatch.h"
#include "model/moe_block.h"
#include "model/transformer.h"
#include "plan/activations.h"
#include "plan/memory.h"
#include "plan/model_stats.h"
#include "train/run_config.h"

namespace mt::plan {
namespace {

// D 64, 4 heads of 16 (MHA), SwiGLU 128.
ModelConfig tiny_dense() {
  ModelConfig m;
  m.vocab_size = 1000, m.d_model = 64, m.n_layers = 2, m.n_heads = 4, m.n_kv_heads = 4, m.d_ff = 128;
  return m;
}

// The dense model with 8 experts of 32, top-2, one shared expert, capacity 1.25.
ModelConfig tiny_moe() {
  ModelConfig m = tiny_dense();
  m.n_experts = 8, m.top_k = 2, m.d_expert = 32, m.n_shared_experts = 1, m.capacity_factor = 1.25;
  return m;
}

double term(const std::vector<ActTerm>& terms, const std::string& op) {
  double s = 0;
  for (const ActTerm& t : terms) s += t.op == op ? t.bytes_per_token : 0.0;
  return s;
}

ActivationOptions bf16(int64_t tp, int64_t seq) {
  ActivationOptions o;
  o.tp = tp, o.seq_len = seq;
  return o;
}

TEST(PlanActivations, DenseLayerByHand) {
  // Per token, bf16, fp32 statistics, t = 1, flash attention:
  //   attn_norm.input 2*64 + 4 = 132, attn_norm.output 2*64 = 128, attn.qkv 2*(4 + 2*4)*16 = 384,
  //   attn.logsumexp 4*4 = 16, attn.output 2*4*16 = 128                      -> attention 788
  //   mlp_norm.input 132, mlp_norm.output 128, mlp.gate_up 2*2*128 = 512, mlp.swiglu 2*128 = 256 -> 1028
  const auto terms = layer_activation_terms(tiny_dense(), 0, bf16(1, 32));
  EXPECT_DOUBLE_EQ(term(terms, "attn_norm.input"), 132);
  EXPECT_DOUBLE_EQ(term(terms, "attn.qkv"), 384);
  EXPECT_DOUBLE_EQ(term(terms, "mlp.gate_up"), 512);
  EXPECT_DOUBLE_EQ(activation_bytes_per_token(terms, kRecomputeNothing), 788 + 1028);
  // Recomputing norms drops both norm outputs (2 x 128); SwiGLU drops its product (256); with flash
  // attention the attention core has nothing to drop.
  EXPECT_DOUBLE_EQ(activation_bytes_per_token(terms, recompute_mask({"norm"})), 1816 - 256);
  EXPECT_DOUBLE_EQ(activation_bytes_per_token(terms, recompute_mask({"swiglu"})), 1816 - 256);
  EXPECT_DOUBLE_EQ(activation_bytes_per_token(terms, recompute_mask({"core_attn"})), 1816);
  EXPECT_DOUBLE_EQ(activation_bytes_per_token(terms, recompute_mask({"qkv"})), 1816 - 384);
  // Materialised attention: the probabilities 2 x H x keys = 2*4*32 = 256 replace the logsumexp (16);
  // selective recomputation (core_attn) drops them.
  ActivationOptions noflash = bf16(1, 32);
  noflash.flash_attention = false;
  const auto nf = layer_activation_terms(tiny_dense(), 0, noflash);
  EXPECT_DOUBLE_EQ(activation_bytes_per_token(nf, kRecomputeNothing), 1816 - 16 + 256);
  EXPECT_DOUBLE_EQ(activation_bytes_per_token(nf, recompute_mask({"core_attn"})), 1816 - 16);
  // t = 2: every term halves (4 KV heads >= t, so none are replicated); full recomputation keeps 2*64/2.
  EXPECT_DOUBLE_EQ(activation_bytes_per_token(layer_activation_terms(tiny_dense(), 0, bf16(2, 32)), 0), 908);
  EXPECT_DOUBLE_EQ(layer_input_bytes_per_token(tiny_dense(), bf16(2, 32)), 64);
  // One KV head at t = 4 is replicated to every rank: qkv = 2*(4 + 2*4)*16 / 4 = 96, not 2*(4 + 2)*16 / 4.
  ModelConfig gqa = tiny_dense();
  gqa.n_kv_heads = 1;
  EXPECT_DOUBLE_EQ(term(layer_activation_terms(gqa, 0, bf16(4, 32)), "attn.qkv"), 96);
}

TEST(PlanActivations, MoeLayerByHand) {
  // Capacity ceil(1.25 * 32 * 2 / 8) = 10 slots x 8 experts per 32-token group: r = 2.5 rows per token.
  ActivationOptions o = bf16(1, 32);
  o.rows_per_token = 2.5;
  const auto terms = layer_activation_terms(tiny_moe(), 0, o);
  // Attention 788 as in the dense layer. MoE, per token:
  //   moe_norm.input 132, moe_norm.output 128, router.logits 4*8 = 32, router.scores 32,
  //   router.topk (4 + 4)*2 = 16, dispatch.rows 2*2.5*64 = 320, experts.gate_up 2*2*2.5*32 = 320,
  //   experts.swiglu 2*2.5*32 = 160, experts.output 2*2.5*64 = 320, shared.gate_up 2*2*32 = 128,
  //   shared.swiglu 2*32 = 64                                                  -> 1652
  EXPECT_DOUBLE_EQ(term(terms, "router.logits") + term(terms, "router.scores"), 64);
  EXPECT_DOUBLE_EQ(term(terms, "router.topk"), 16);
  EXPECT_DOUBLE_EQ(term(terms, "dispatch.rows"), 320);
  EXPECT_DOUBLE_EQ(term(terms, "experts.gate_up"), 320);
  EXPECT_DOUBLE_EQ(term(terms, "experts.output"), 320);
  EXPECT_DOUBLE_EQ(activation_bytes_per_token(terms, kRecomputeNothing), 788 + 1652);
  // Recomputing the routed experts keeps their input rows only: 1652 - 320 - 160 - 320.
  EXPECT_DOUBLE_EQ(activation_bytes_per_token(terms, recompute_mask({"experts"})), 788 + 852);
  EXPECT_DOUBLE_EQ(activation_bytes_per_token(terms, recompute_mask({"expert_output"})), 788 + 1332);
  EXPECT_DOUBLE_EQ(activation_bytes_per_token(terms, recompute_mask({"shared_experts"})), 788 + 1652 - 192);
  // SwiGLU products of the routed and the shared experts: 160 + 64.
  EXPECT_DOUBLE_EQ(activation_bytes_per_token(terms, recompute_mask({"swiglu"})), 788 + 1652 - 224);
  // FP8 caching (1 + 4/128 bytes): dispatch rows 2.5*64*1.03125 = 165, experts.gate_up 2*2.5*32*1.03125 = 165.
  o.fp8_cache_bytes = 1.0 + 4.0 / 128.0;
  const auto f8 = layer_activation_terms(tiny_moe(), 0, o);
  EXPECT_DOUBLE_EQ(term(f8, "dispatch.rows"), 165);
  EXPECT_DOUBLE_EQ(term(f8, "experts.gate_up"), 165);
  EXPECT_DOUBLE_EQ(term(f8, "attn.output"), 66);  // the output projection's input: 64 * 1.03125
  EXPECT_DOUBLE_EQ(term(f8, "attn.qkv"), 384);    // read by attention, not a linear layer: stays bf16
  // Latent MoE (Dl 16): norm on the down-projection output 2*16 + 4 + 2*16, the up-projection input 2*16,
  // and the dispatched rows shrink to Din = 16: 2*2.5*16 = 80.
  ModelConfig lat = tiny_moe();
  lat.d_latent = 16;
  o.fp8_cache_bytes = 0;
  const auto lt = layer_activation_terms(lat, 0, o);
  EXPECT_DOUBLE_EQ(term(lt, "latent.norm_input") + term(lt, "latent.norm_output") + term(lt, "latent.up_input"),
                   100);
  EXPECT_DOUBLE_EQ(term(lt, "dispatch.rows"), 80);
}

TEST(PlanActivations, KorthikantiFormulas) {
  // GPT-3 175B in Korthikanti et al. 2022: s 2048, b 1, h 12288, a 96, t 8. Per layer:
  //   sbh = 25,165,824; 5as/h = 80; no parallelism sbh (34 + 80) = 2,868,903,936 bytes;
  //   TP only sbh (10 + 24/8 + 80/8) = 578,813,952; TP + SP sbh/8 (34 + 80) = 358,612,992;
  //   selective 34 sbh / 8 = 106,954,752; full 2 sbh = 50,331,648.
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8;
  EXPECT_DOUBLE_EQ(korthikanti_layer_bytes(s, b, h, a, t, KorthikantiCase::kNoParallel), 2868903936.0);
  EXPECT_DOUBLE_EQ(korthikanti_layer_bytes(s, b, h, a, t, KorthikantiCase::kTensor), 578813952.0);
  EXPECT_DOUBLE_EQ(korthikanti_layer_bytes(s, b, h, a, t, KorthikantiCase::kTensorSequence), 358612992.0);
  EXPECT_DOUBLE_EQ(korthikanti_layer_bytes(s, b, h, a, t, KorthikantiCase::kTensorSequenceSelective), 106954752.0);
  EXPECT_DOUBLE_EQ(korthikanti_layer_bytes(s, b, h, a, t, KorthikantiCase::kFull), 50331648.0);
  // The per-op terms for a GPT-3-shaped layer of this architecture (MHA, SwiGLU of F = 4h), t = 8.
  ModelConfig g;
  g.d_model = 12288, g.n_heads = 96, g.n_kv_heads = 96, g.d_ff = 4 * 12288, g.n_layers = 1;
  // Materialised attention: the probabilities are 2as^2b of Korthikanti's 5as^2b (the dropout mask as^2b
  // and dropout output 2as^2b do not exist without dropout), divided by t.
  ActivationOptions o = bf16(8, 2048);
  o.flash_attention = false;
  EXPECT_DOUBLE_EQ(term(layer_activation_terms(g, 0, o), "attn.probabilities") * s * b, 2 * a * s * s * b / t);
  // Flash attention, per token x t, in units of h: Korthikanti's 34 (attention 11, MLP 19, LayerNorms 4)
  // less the two dropout masks (1 + 1), plus 8 because SwiGLU keeps both 4h projections (16) where GeLU
  // keeps one (8): 40 h; plus fp32 statistics: two norms 4 + 4 and the logsumexp 4a.
  const double ours = activation_bytes_per_token(layer_activation_terms(g, 0, bf16(8, 2048)), 0) * s * b;
  EXPECT_DOUBLE_EQ(ours, (34.0 - 2.0 + 8.0) * s * b * h / t + (8.0 + 4.0 * a) * s * b / t);
}

// The CPU trainer keeps, per layer, exactly the tensors the formula counts (in fp32, statistics included)
// plus one copy it could do without: the fused q|k|v before RoPE (the attention output is kept once, in
// the token-major order the output projection reads).
// MoE layers add routing bookkeeping (slots, per-expert offsets, row owners); the combined output is
// kept only with a latent projection, as its input, and the block total only with an output norm, as
// that norm's input, both of which the formula counts. The check: predicted <= allocated <= predicted x
// (1 + tolerance), and the difference is exactly those extras.
int64_t per_layer_allocation(ModelConfig c, int64_t B, int64_t T) {
  c.n_layers = 3;
  const int64_t three = Transformer::activation_bytes(c, B, T);
  c.n_layers = 2;
  return three - Transformer::activation_bytes(c, B, T);
}

TEST(PlanActivations, MatchesWhatTheCpuTrainerAllocates) {
  struct Case {
    const char* name;
    ModelConfig c;
    int64_t B, T;
    double tolerance;  // (allocated - predicted) / allocated
  };
  ModelConfig gqa = tiny_dense();
  gqa.n_kv_heads = 2, gqa.qk_norm = true, gqa.d_ff = 256;
  ModelConfig moe = tiny_moe();
  moe.capacity_factor = 0;  // dropless: rows = K per token, aligned per expert by the trainer
  ModelConfig normed = tiny_moe();
  normed.moe_out_norm = true;
  const std::vector<Case> cases = {{"dense", tiny_dense(), 2, 32, 0.25},
                                   {"gqa+qk-norm", gqa, 2, 32, 0.25},
                                   {"moe", tiny_moe(), 2, 32, 0.25},
                                   {"moe out-norm", normed, 2, 32, 0.25},
                                   {"moe dropless", moe, 2, 64, 0.25}};
  for (const Case& k : cases) {
    const ModelConfig& c = k.c;
    const int64_t N = k.B * k.T, D = c.d_model, H = c.n_heads, Dh = c.head_dim(), Hkv = c.kv_heads(0);
    ActivationOptions o;
    o.tp = 1, o.seq_len = k.T, o.elem_bytes = 4, o.stat_bytes = 4;
    int64_t R = 0, extras = 4 * N * (H + 2 * Hkv) * Dh;  // qkv before RoPE
    if (c.n_experts > 0) {
      const int64_t G = c.group_size(k.T);
      R = moe_max_rows(DispatchDims{N, c.n_experts, c.top_k, G, c.capacity(G), kExpertRowAlign});
      o.rows_per_token = double(R) / double(N);  // the trainer's rows, padding included
      extras += 4 * N * c.top_k + 8 * (c.n_experts + 1) + 8 * c.n_experts + 4 * R;  // slot, begin, kept, row_token
    }
    const double predicted = activation_bytes_per_token(layer_activation_terms(c, 0, o), 0) * double(N);
    const double allocated = double(per_layer_allocation(c, k.B, k.T));
    std::printf("%-13s predicted %8.0f allocated %8.0f bytes per layer (%.1f%%)\n", k.name, predicted, allocated,
                100.0 * predicted / allocated);
    EXPECT_DOUBLE_EQ(allocated - predicted, double(extras)) << k.name;
    EXPECT_LE(predicted, allocated) << k.name;
    EXPECT_LE((allocated - predicted) / allocated, k.tolerance) << k.name << ": predicted " << predicted
                                                                 << " allocated " << allocated;
  }
}

TEST(PlanActivations, AllocatorOverheadIsAStatedParameter) {
  LayoutConfig l;
  EXPECT_EQ(l.allocator, Allocator::kExpandable);
  EXPECT_DOUBLE_EQ(allocator_overhead(l), 0.02);
  l.allocator = Allocator::kCaching;
  EXPECT_DOUBLE_EQ(allocator_overhead(l), 0.15);
  l.allocator = Allocator::kArena;
  EXPECT_DOUBLE_EQ(allocator_overhead(l), 0.0);
  l.fragmentation = 0.07;  // a measured figure overrides the allocator's
  EXPECT_DOUBLE_EQ(allocator_overhead(l), 0.07);
  auto bad = parse_layout("[batch]\nglobal_batch = 8\n[memory]\nrecompute_modules = [\"norms\"]\n", "l.toml");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), testing::HasSubstr("memory.recompute_modules"));
  auto fp8 = parse_layout("[batch]\nglobal_batch = 8\n[memory]\nfp8_activations = true\n", "l.toml");
  ASSERT_FALSE(fp8.is_ok());
  EXPECT_THAT(fp8.status().message(), testing::HasSubstr("precision.gemm"));
}

// ---- the published 80 GB layouts ----

struct Published {
  ModelConfig model;
  int64_t seq_len = 0;
  ClusterConfig cluster;
  LayoutConfig layout;
};

Published load_published(const std::string& model, const std::string& cluster, const std::string& layout,
                         const std::vector<std::string>& cluster_sets) {
  const std::filesystem::path root = std::filesystem::path(MT_SOURCE_DIR) / "configs";
  Published p;
  auto m = load_run_config((root / "models" / model).string(), {});
  EXPECT_TRUE(m.is_ok()) << m.status().message();
  p.model = m->model, p.seq_len = m->train.seq_len;
  auto c = load_cluster((root / "clusters" / cluster).string(), cluster_sets);
  EXPECT_TRUE(c.is_ok()) << c.status().message();
  p.cluster = *c;
  auto l = load_layout((root / "layouts" / layout).string());
  EXPECT_TRUE(l.is_ok()) << l.status().message();
  p.layout = *l;
  return p;
}

MemoryBreakdown memory_of(const Published& p, const LayoutConfig& l) {
  auto par = resolve(l, p.model, p.seq_len, p.cluster);
  EXPECT_TRUE(par.is_ok()) << par.status().message();
  return memory_per_gpu(p.model, model_stats(p.model, par->seq_len), *par, p.cluster);
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

TEST(PlanActivations, Llama3405bFitsOn80GbAndOversizedLayoutsDoNot) {
  const Published p = load_published("llama3-405b.toml", "h100.toml", "llama3-405b-tp8-pp16.toml",
                                      {"topology.racks=2048"});
  const MemoryBreakdown m = memory_of(p, p.layout);
  EXPECT_TRUE(m.fits()) << m.total() / kGiB << " GiB on stage " << m.stage;
  std::printf("Llama 3 405B TP8 PP16: %.1f GiB of %.0f (activations %.1f, stage %lld)\n", m.total() / kGiB,
              m.capacity / kGiB, m.activations / kGiB, (long long)m.stage);
  // 16,384-token sequences (twice the tokens in flight) cannot fit without recomputation; with full
  // recomputation they do.
  LayoutConfig big = p.layout;
  big.seq_len = 16384;
  EXPECT_FALSE(memory_of(p, big).fits());
  big.recompute = Recompute::kFull;
  EXPECT_TRUE(memory_of(p, big).fits());
  LayoutConfig tp4 = p.layout;  // TP 4 with PP 16 on 8,192 GPUs: twice the weights and activations per GPU
  tp4.tp = 4, tp4.gpus = 8192;
  EXPECT_FALSE(memory_of(p, tp4).fits());
}

TEST(PlanActivations, DeepSeekV3FitsOn80GbAndOversizedLayoutsDoNot) {
  const Published p = load_published("deepseek-v3.toml", "h800.toml", "deepseek-v3-pp16-ep64.toml", {});
  const MemoryBreakdown m = memory_of(p, p.layout);
  EXPECT_TRUE(m.fits()) << m.total() / kGiB << " GiB on stage " << m.stage;
  // With MLA's own terms (kept latents, the 128 x 128 attention output) and the MTP module on the last
  // stage, counted by the planner itself. The layout keeps one layer on the last stage; with the even
  // split it holds three besides the head, the MTP block and its head pass, and does not fit.
  EXPECT_TRUE(p.model.mla());
  EXPECT_EQ(p.model.mtp_depth, 1);
  LayoutConfig even = p.layout;
  even.last_stage_layers = -1;
  const MemoryBreakdown e = memory_of(p, even);
  EXPECT_FALSE(e.fits());
  EXPECT_EQ(e.stage, 15);
  std::printf("DeepSeek-V3 PP16 EP64: %.1f GiB of %.0f (activations %.1f, stage %lld)\n", m.total() / kGiB,
              m.capacity / kGiB, m.activations / kGiB, (long long)m.stage);
  // The fit rests on not keeping the routed experts' outputs (an identity, not stated by the report):
  // keeping them, it does not fit.
  LayoutConfig keep = p.layout;
  keep.recompute_modules = {"norm", "qkv", "swiglu"};
  EXPECT_FALSE(memory_of(p, keep).fits());
  // Without the report's memory savings (recomputed norms and up-projections, FP8 caches) it does not fit.
  LayoutConfig plain = p.layout;
  plain.recompute_modules.clear();
  plain.fp8_activations = false;
  EXPECT_FALSE(memory_of(p, plain).fits());
  LayoutConfig ep8 = p.layout;  // experts over 8 GPUs only: 32 experts' weights and states per GPU
  ep8.ep = 8;
  EXPECT_FALSE(memory_of(p, ep8).fits());
}

}  // namespace
}  // namespace mt::plan
