// plan_mla_test.cpp — multi-head latent attention (DeepSeek-V2 section 2.1,
// DeepSeek-V3 section 2.1.1) in the planner: parameters, training FLOPs,
// KV cache, inference FLOPs and activations of a tiny MLA model by hand from
// the published formulas; DeepSeek-V3's published sizes; GQA counts unchanged;
// the key checks; the trainer's parameter layout against the planner's count.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model/flops.h"
#include "model/param_layout.h"
#include "model/weights.h"
#include "plan/activations.h"
#include "plan/model_stats.h"
#include "train/run_config.h"
#include "train/trainer.h"

namespace mt::plan {
namespace {

// V 1000, D 64, 2 dense layers (SwiGLU 128), tied; MLA with 4 heads: Dq 32, Dc 16, Dn 8, Dr 4, Dv 8.
ModelConfig tiny_mla() {
  ModelConfig m;
  m.vocab_size = 1000, m.d_model = 64, m.n_layers = 2, m.n_heads = 4, m.d_ff = 128;
  m.attention = AttentionKind::kMla;
  m.q_lora_rank = 32, m.kv_lora_rank = 16, m.qk_nope_head_dim = 8, m.qk_rope_head_dim = 4, m.v_head_dim = 8;
  return m;
}

double term(const std::vector<ActTerm>& terms, const std::string& op) {
  double s = 0;
  for (const ActTerm& t : terms) s += t.op == op ? t.bytes_per_token : 0.0;
  return s;
}

TEST(PlanMla, ParametersByHand) {
  // W_DQ 32*64 = 2048, W_UQ 4*(8+4)*32 = 1536, W_DKV (16+4)*64 = 1280, W_UK 4*8*16 = 512,
  // W_UV 4*8*16 = 512, W_O 64*4*8 = 2048: 7936, of which the down-projections are 3328.
  const ModelConfig m = tiny_mla();
  EXPECT_EQ(attention_matmul_params(m, 0), 7936);
  EXPECT_EQ(attention_down_params(m), 3328);
  const LayerParams p = layer_params(m, 0);
  EXPECT_EQ(p.attn, 7936 - 3328);
  EXPECT_EQ(p.attn_down, 3328);
  EXPECT_EQ(p.norms, 2 * 64 + 32 + 16);  // attn/ffn norms, q and kv latent norms
  // Without a query latent: W_Q (4*12, 64) = 3072 replaces W_DQ and W_UQ.
  ModelConfig direct = m;
  direct.q_lora_rank = 0;
  EXPECT_EQ(attention_matmul_params(direct, 0), 3072 + 1280 + 512 + 512 + 2048);
}

TEST(PlanMla, DeepSeekV3AttentionSizes) {
  // 61 layers of 187,105,280 attention matrices (W_DQ 11,010,048, W_UQ 37,748,736, W_DKV 4,128,768,
  // W_UK and W_UV 8,388,608 each, W_O 117,440,512); KV cache 576 values per token and layer
  // (DeepSeek-V2 Table 1: (d_c + d_h^R) l).
  ModelConfig m;
  m.vocab_size = 129280, m.d_model = 7168, m.n_layers = 61, m.n_heads = 128, m.d_ff = 18432;
  m.attention = AttentionKind::kMla;
  m.q_lora_rank = 1536, m.kv_lora_rank = 512, m.qk_nope_head_dim = 128, m.qk_rope_head_dim = 64, m.v_head_dim = 128;
  EXPECT_EQ(attention_matmul_params(m, 0), 187105280);
  EXPECT_EQ(kv_cache_elems(m, 0), 576);
  EXPECT_DOUBLE_EQ(model_stats(m, 4096).kv_bytes_per_token, 61 * 576 * 2.0);
}

TEST(PlanMla, FlopsByHand) {
  // Active matrices: head 64,000 + 2 x (7,936 + SwiGLU 24,576) = 129,024. Mean keys at T = 32: 16.5 per
  // layer. Training: 6 x 129,024 + 6 H (Dqk + Dv) = 6*4*(12 + 8) = 480 per key x 33 keys = 789,984.
  const ModelConfig m = tiny_mla();
  EXPECT_EQ(active_matmul_params(m), 129024);
  EXPECT_DOUBLE_EQ(flops_per_token(m, 32), 6.0 * 129024 + 480 * 33);
  const ModelStats s = model_stats(m, 32);
  // Prefill: 2 x 129,024 + 2*4*20 = 160 per key x 33.
  EXPECT_DOUBLE_EQ(s.prefill_flops_per_token, 2.0 * 129024 + 160 * 33);
  // Decode, absorbed form, 32 cached keys per layer: 2 H (2 Dc + Dr) = 2*4*36 = 288 per key.
  EXPECT_DOUBLE_EQ(s.decode_flops_per_token, 2.0 * 129024 + 288 * 32 * 2);
  // KV cache: (Dc + Dr) = 20 bf16 values per layer: 80 bytes per token; 32 tokens: 2,560.
  EXPECT_DOUBLE_EQ(s.kv_bytes_per_token, 80);
  EXPECT_DOUBLE_EQ(s.kv_bytes_per_sequence, 80 * 32);
}

TEST(PlanMla, GqaCountsUnchanged) {
  // The familiar 6 N + 12 D T_eff per layer, bit for bit.
  ModelConfig m;
  m.vocab_size = 1000, m.d_model = 64, m.n_layers = 2, m.n_heads = 4, m.n_kv_heads = 2, m.d_ff = 128;
  const double n = double((4 + 2 * 2) * 16 * 64 + 64 * 64 + 3 * 128 * 64) * 2 + 64000;
  EXPECT_EQ(double(active_matmul_params(m)), n);
  EXPECT_EQ(flops_per_token(m, 32), 6.0 * n + 12.0 * 64.0 * 33.0);
  EXPECT_DOUBLE_EQ(model_stats(m, 32).kv_bytes_per_token, 2 * (2 * 2 * 16) * 2.0);
}

TEST(PlanMla, ActivationsByHand) {
  // Per token, bf16, fp32 statistics, t = 1, flash attention:
  //   attn_norm.input 2*64 + 4 = 132, attn_norm.output 128, mla.q_latent 2*32 + 4 = 68,
  //   mla.q_latent_norm 64, mla.kv_latent 2*(16 + 4) + 4 = 44, mla.kv_latent_norm 32,
  //   attn.qkv 2*(2*4*12 + 4*8) = 256, attn.logsumexp 16, attn.output 2*4*8 = 64       -> 804
  ActivationOptions o;
  o.seq_len = 32;
  const auto terms = layer_activation_terms(tiny_mla(), 0, o);
  EXPECT_DOUBLE_EQ(term(terms, "mla.q_latent"), 68);
  EXPECT_DOUBLE_EQ(term(terms, "mla.kv_latent"), 44);
  EXPECT_DOUBLE_EQ(term(terms, "attn.qkv"), 256);
  EXPECT_DOUBLE_EQ(term(terms, "attn.output"), 64);
  const double mlp = 132 + 128 + 2 * 2 * 128 + 2 * 128;
  EXPECT_DOUBLE_EQ(activation_bytes_per_token(terms, kRecomputeNothing), 804 + mlp);
  // DeepSeek-V3 3.2.3: norms and up-projections recomputed, only the latents kept: drops 128 + 64 + 32
  // (normalised inputs) and 256 (q, k, v); and the MLP's norm output 128.
  EXPECT_DOUBLE_EQ(activation_bytes_per_token(terms, recompute_mask({"norm", "qkv"})), 804 + mlp - 480 - 128);
  // t = 2: every term halves.
  o.tp = 2;
  EXPECT_DOUBLE_EQ(activation_bytes_per_token(layer_activation_terms(tiny_mla(), 0, o), 0), (804 + mlp) / 2);
}

constexpr const char* kMla = R"(
[model]
vocab_size = 300
d_model = 64
n_layers = 2
n_heads = 4
attention = "mla"
kv_lora_rank = 16
qk_nope_head_dim = 8
qk_rope_head_dim = 4
v_head_dim = 8
[train]
seq_len = 32
batch_size = 1
steps = 1
)";

TEST(PlanMla, KeysAreCheckedAndTheTrainerAcceptsIt) {
  auto ok = parse_run_config(kMla, "mla.toml", {});
  ASSERT_TRUE(ok.is_ok()) << ok.status().message();
  EXPECT_TRUE(ok->model.mla());
  Status accepted = check_trainer_limits(*ok);
  EXPECT_TRUE(accepted.is_ok()) << accepted.message();
  auto no_rope = parse_run_config(kMla, "mla.toml", {"model.qk_rope_head_dim=0"});
  ASSERT_FALSE(no_rope.is_ok());
  EXPECT_THAT(no_rope.status().message(), testing::HasSubstr("model.qk_rope_head_dim"));
  auto odd = parse_run_config(kMla, "mla.toml", {"model.qk_rope_head_dim=3"});
  ASSERT_FALSE(odd.is_ok());
  EXPECT_THAT(odd.status().message(), testing::HasSubstr("even"));
  // Sliding-window layers work with MLA; per-layer kv head counts and qk-norm mean nothing there.
  auto local = parse_run_config(kMla, "mla.toml", {"model.layer_pattern=\"LG\"", "model.window=8"});
  ASSERT_TRUE(local.is_ok()) << local.status().message();
  auto local_heads = parse_run_config(kMla, "mla.toml", {"model.n_kv_heads_local=2"});
  ASSERT_FALSE(local_heads.is_ok());
  EXPECT_THAT(local_heads.status().message(), testing::HasSubstr("model.n_kv_heads_local"));
  auto qk = parse_run_config(kMla, "mla.toml", {"model.qk_norm=true"});
  ASSERT_FALSE(qk.is_ok());
  EXPECT_THAT(qk.status().message(), testing::HasSubstr("model.qk_norm"));
}

// The trainer's flat parameter buffer (model/weights.cpp build_layout) holds exactly the planner's count
// (layer_params: matrices by attention_matmul_params, norms including both latent norms).
TEST(PlanMla, TrainerLayoutHoldsThePlannersParameterCount) {
  std::vector<ModelConfig> configs;
  configs.push_back(tiny_mla());
  ModelConfig direct = tiny_mla();  // W_Q straight from D, untied head, MoE layers, sliding window
  direct.q_lora_rank = 0, direct.tied_embeddings = false, direct.n_layers = 3, direct.n_experts = 4;
  direct.n_dense_layers = 1, direct.d_expert = 16, direct.n_shared_experts = 1, direct.layer_pattern = "LG";
  configs.push_back(direct);
  ModelConfig wide = tiny_mla();  // Dv apart from Dn + Dr, latent MoE
  wide.v_head_dim = 20, wide.qk_rope_head_dim = 6, wide.n_experts = 8, wide.d_latent = 16;
  wide.moe_out_norm = true;
  configs.push_back(wide);
  for (const ModelConfig& m : configs) {
    ParamLayout layout;
    build_layout(m, layout);
    EXPECT_EQ(layout.total(), model_stats(m, 32).total) << "q_lora_rank " << m.q_lora_rank;
    for (int64_t l = 0; l < m.n_layers; ++l) {
      const auto [lo, hi] = layout.layer_range(l);
      EXPECT_EQ(hi - lo, layer_params(m, l).total()) << "layer " << l;
    }
  }
  ParamLayout layout;
  build_layout(tiny_mla(), layout);
  EXPECT_EQ(layout.find("layers.0.attn.wdq")->numel + layout.find("layers.0.attn.wdkv")->numel +
                layout.find("layers.0.attn.wkr")->numel,
            attention_down_params(tiny_mla()));
}

}  // namespace
}  // namespace mt::plan
