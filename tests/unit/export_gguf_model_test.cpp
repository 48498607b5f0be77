// export_gguf_model_test.cpp — the GGUF mappings without llama.cpp: every
// tensor of a glm4moe export (leading dense layer, two shared experts side by
// side, untied head, selection bias) and of a deepseek2 export (MLA with its
// RoPE rows moved to interleaved pairs, kv_b per head) holds the parameter
// values it should, in the shape llama.cpp reads; Q8_0 applies to matrices
// with rows a multiple of 32 long and never to norms or the router; the
// byte tokenizer's GPT-2 alphabet; refusals name the key. That llama.cpp
// computes the same logits: tests/e2e/interop_gguf_test.cpp.
#include <gtest/gtest.h>

#include <set>

#include "export/gguf_model.h"
#include "export/gguf_tokenizer.h"
#include "model/weights.h"
#include "train/inference_model.h"

namespace mt {
namespace {

ModelConfig glm() {
  ModelConfig c;
  c.vocab_size = 300;
  c.d_model = 64;
  c.n_layers = 3;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.d_ff = 96;
  c.n_experts = 4;
  c.top_k = 2;
  c.d_expert = 32;
  c.n_shared_experts = 2;
  c.n_dense_layers = 1;
  c.tied_embeddings = false;
  c.qk_norm = true;
  c.router_score = RouterScore::kSigmoid;
  c.aux_free_bias = true;
  return c;
}

ModelConfig mla() {
  ModelConfig c = glm();
  c.attention = AttentionKind::kMla;
  c.n_kv_heads = 1;
  c.qk_norm = false;
  c.q_lora_rank = 24;
  c.kv_lora_rank = 20;
  c.qk_nope_head_dim = 6;
  c.qk_rope_head_dim = 8;
  c.v_head_dim = 10;
  return c;
}

InferenceModel model(const ModelConfig& c) {
  InferenceModel m;
  m.cfg.model = c;
  m.cfg.train.seq_len = 128;
  build_layout(c, m.layout);
  m.params.resize(size_t(m.layout.total()));
  init_params(m.params.data(), m.layout, c, 7);
  for (size_t i = 0; i < m.params.size(); ++i) m.params[i] += 1e-3f * float(i % 97);  // norms differ too
  if (c.aux_free_bias)
    for (int64_t l = 0; l < c.n_layers; ++l)
      if (c.is_moe(l))
        for (int64_t e = 0; e < c.n_experts; ++e) m.router_bias.push_back(0.01f * float(l * 10 + e));
  return m;
}

std::vector<float> param(const InferenceModel& m, const std::string& name) {
  const ParamEntry* e = m.layout.find(name);
  EXPECT_NE(e, nullptr) << name;
  return std::vector<float>(m.params.begin() + e->offset, m.params.begin() + e->offset + e->numel);
}

const GgufTensor& tensor(const GgufFile& f, const std::string& name) {
  for (const GgufTensor& t : f.tensors)
    if (t.name == name) return t;
  ADD_FAILURE() << "no tensor " << name;
  static GgufTensor none;
  return none;
}

std::unique_ptr<TextCodec> bytes() { return std::move(TextCodec::open("").value()); }

TEST(GgufModel, Glm4MoeTensorsHoldTheParameters) {
  const ModelConfig c = glm();
  const InferenceModel m = model(c);
  auto f = to_gguf(m, *bytes(), GgmlType::kF32);
  ASSERT_TRUE(f) << f.status().message();
  const GgufFile& g = f.value();
  EXPECT_EQ(std::get<std::string>(*g.find("general.architecture")), "glm4moe");
  EXPECT_EQ(std::get<uint32_t>(*g.find("glm4moe.leading_dense_block_count")), 1u);
  EXPECT_EQ(std::get<uint32_t>(*g.find("glm4moe.expert_gating_func")), 2u);  // sigmoid
  EXPECT_EQ(std::get<bool>(*g.find("glm4moe.expert_weights_norm")), true);
  std::set<std::string> names;
  for (const GgufTensor& t : g.tensors) EXPECT_TRUE(names.insert(t.name).second) << t.name;
  EXPECT_EQ(tensor(g, "token_embd.weight").data, param(m, "embed"));
  EXPECT_EQ(tensor(g, "output.weight").data, param(m, "head"));
  EXPECT_EQ(tensor(g, "blk.0.ffn_gate.weight").data, param(m, "layers.0.mlp.w1"));
  EXPECT_EQ(tensor(g, "blk.1.attn_k_norm.weight").data, param(m, "layers.1.attn.k_norm"));
  EXPECT_EQ(tensor(g, "blk.2.post_attention_norm.weight").data, param(m, "layers.2.ffn_norm"));
  // Experts stacked (E, F, D) / (E, D, F); expert 3 of layer 2.
  const int64_t E = c.n_experts, F = c.d_expert, D = c.d_model;
  const GgufTensor& up = tensor(g, "blk.2.ffn_up_exps.weight");
  EXPECT_EQ(up.shape, (std::vector<int64_t>{E, F, D}));
  const std::vector<float> w3 = param(m, "layers.2.moe.experts.3.w3");
  EXPECT_TRUE(std::equal(w3.begin(), w3.end(), up.data.begin() + 3 * F * D));
  EXPECT_EQ(tensor(g, "blk.2.ffn_down_exps.weight").shape, (std::vector<int64_t>{E, D, F}));
  // Two shared experts as one of width 2F: the second's down projection in columns [F, 2F).
  const GgufTensor& down = tensor(g, "blk.1.ffn_down_shexp.weight");
  EXPECT_EQ(down.shape, (std::vector<int64_t>{D, 2 * F}));
  const std::vector<float> d1 = param(m, "layers.1.moe.shared.1.w2");
  for (int64_t r = 0; r < D; ++r)
    for (int64_t k = 0; k < F; ++k) ASSERT_EQ(down.data[size_t(r * 2 * F + F + k)], d1[size_t(r * F + k)]);
  const GgufTensor& gate = tensor(g, "blk.1.ffn_gate_shexp.weight");
  const std::vector<float> g1 = param(m, "layers.1.moe.shared.1.w1");
  EXPECT_TRUE(std::equal(g1.begin(), g1.end(), gate.data.begin() + F * D));
  // The selection bias of the second MoE layer (layer 2).
  EXPECT_EQ(tensor(g, "blk.2.exp_probs_b.bias").data,
            std::vector<float>(m.router_bias.begin() + E, m.router_bias.begin() + 2 * E));
}

TEST(GgufModel, Deepseek2MovesRopeRowsToInterleavedPairs) {
  const ModelConfig c = mla();
  const InferenceModel m = model(c);
  auto f = to_gguf(m, *bytes(), GgmlType::kF32);
  ASSERT_TRUE(f) << f.status().message();
  const GgufFile& g = f.value();
  EXPECT_EQ(std::get<std::string>(*g.find("general.architecture")), "deepseek2");
  const int64_t H = c.n_heads, Dq = c.q_lora_rank, Dc = c.kv_lora_rank, Dn = c.qk_nope_head_dim,
                Dr = c.qk_rope_head_dim, Dv = c.v_head_dim, D = c.d_model;
  const std::vector<float> wuq = param(m, "layers.1.attn.wuq");
  const GgufTensor& qb = tensor(g, "blk.1.attn_q_b.weight");
  ASSERT_EQ(qb.shape, (std::vector<int64_t>{H * (Dn + Dr), Dq}));
  auto row = [](const std::vector<float>& w, int64_t r, int64_t cols) {
    return std::vector<float>(w.begin() + r * cols, w.begin() + (r + 1) * cols);
  };
  for (int64_t h = 0; h < H; ++h) {
    const int64_t base = h * (Dn + Dr);
    for (int64_t i = 0; i < Dn; ++i) EXPECT_EQ(row(qb.data, base + i, Dq), row(wuq, base + i, Dq));
    for (int64_t i = 0; i < Dr / 2; ++i) {
      EXPECT_EQ(row(qb.data, base + Dn + 2 * i, Dq), row(wuq, base + Dn + i, Dq));
      EXPECT_EQ(row(qb.data, base + Dn + 2 * i + 1, Dq), row(wuq, base + Dn + i + Dr / 2, Dq));
    }
  }
  const GgufTensor& kva = tensor(g, "blk.0.attn_kv_a_mqa.weight");
  ASSERT_EQ(kva.shape, (std::vector<int64_t>{Dc + Dr, D}));
  const std::vector<float> wdkv = param(m, "layers.0.attn.wdkv"), wkr = param(m, "layers.0.attn.wkr");
  EXPECT_TRUE(std::equal(wdkv.begin(), wdkv.end(), kva.data.begin()));
  for (int64_t i = 0; i < Dr / 2; ++i) {
    EXPECT_EQ(row(kva.data, Dc + 2 * i, D), row(wkr, i, D));
    EXPECT_EQ(row(kva.data, Dc + 2 * i + 1, D), row(wkr, i + Dr / 2, D));
  }
  const GgufTensor& kvb = tensor(g, "blk.0.attn_kv_b.weight");
  ASSERT_EQ(kvb.shape, (std::vector<int64_t>{H * (Dn + Dv), Dc}));
  const std::vector<float> wuv = param(m, "layers.0.attn.wuv");
  EXPECT_EQ(row(kvb.data, 2 * (Dn + Dv) + Dn, Dc), row(wuv, 2 * Dv, Dc));  // head 2's first value row
}

TEST(GgufModel, Q8AppliesToMatricesWithRowsOfBlocks) {
  ModelConfig c = mla();  // kv_lora_rank 20: kv_b's rows are 20 long
  auto f = to_gguf(model(c), *bytes(), GgmlType::kQ8_0);
  ASSERT_TRUE(f);
  for (const GgufTensor& t : f.value().tensors) {
    const bool matrix = t.shape.size() >= 2 && t.name.find("ffn_gate_inp") == std::string::npos;
    const GgmlType want = matrix && t.shape.back() % 32 == 0 ? GgmlType::kQ8_0 : GgmlType::kF32;
    EXPECT_EQ(t.type, want) << t.name;
  }
  EXPECT_EQ(tensor(f.value(), "blk.0.attn_kv_b.weight").type, GgmlType::kF32);
  EXPECT_EQ(tensor(f.value(), "blk.0.attn_kv_a_mqa.weight").type, GgmlType::kQ8_0);
}

TEST(GgufModel, ByteTokenizerUsesGpt2sAlphabet) {
  std::set<std::string> seen;
  for (int b = 0; b < 256; ++b) EXPECT_TRUE(seen.insert(gpt2_byte_char(b)).second) << b;
  EXPECT_EQ(gpt2_byte_char('A'), "A");
  EXPECT_EQ(gpt2_byte_char(' '), "\xc4\xa0");   // U+0120 "Ġ"
  EXPECT_EQ(gpt2_byte_char('\n'), "\xc4\x8a");  // U+010A "Ċ"
  EXPECT_EQ(gpt2_byte_char(0xFF), "\xc3\xbf");  // itself, U+00FF
  GgufFile f;
  add_gguf_tokenizer(f, *bytes(), 300);
  const auto& tokens = std::get<std::vector<std::string>>(*f.find("tokenizer.ggml.tokens"));
  ASSERT_EQ(tokens.size(), 300u);
  EXPECT_EQ(tokens[256], "<|endoftext|>");
  EXPECT_EQ(std::get<uint32_t>(*f.find("tokenizer.ggml.bos_token_id")), 256u);
  EXPECT_EQ(std::get<std::vector<int32_t>>(*f.find("tokenizer.ggml.token_type"))[299], 5);  // unused
}

TEST(GgufModel, RefusalsNameTheKey) {
  struct Refusal {
    std::string message;
    void (*set)(ModelConfig&);
  };
  const std::vector<Refusal> table = {
      {"model.layer_pattern = \"LG\": llama.cpp's glm4moe has no sliding-window (L) layers",
       [](ModelConfig& c) { c.layer_pattern = "LG"; }},
      {"model.layer_pattern = \"DG\": llama.cpp's glm4moe has no gated-delta (D) layers",
       [](ModelConfig& c) { c.layer_pattern = "DG"; }},
      {"model.n_shared_experts = 0: llama.cpp's glm4moe has no MoE block without a shared expert",
       [](ModelConfig& c) { c.n_shared_experts = 0; }},
      {"model.n_experts = 0: llama.cpp's glm4moe has no dense model", [](ModelConfig& c) { c.n_experts = 0; }},
      {"model.d_latent = 16: llama.cpp's glm4moe has no latent MoE", [](ModelConfig& c) { c.d_latent = 16; }},
      {"model.moe_out_norm = true", [](ModelConfig& c) { c.moe_out_norm = true; }},
      {"model.mtp_depth = 1", [](ModelConfig& c) { c.mtp_depth = 1; }},
      {"model.rope_scaling = \"yarn\"", [](ModelConfig& c) { c.rope_scaling = RopeScalingKind::kYarn; }},
  };
  for (const Refusal& r : table) {
    ModelConfig c = glm();
    r.set(c);
    auto a = gguf_arch_for(c);
    ASSERT_FALSE(a) << r.message;
    EXPECT_EQ(a.status().message().rfind(r.message, 0), 0u) << a.status().message();
  }
  ModelConfig local_mla = mla();
  local_mla.layer_pattern = "GL";
  auto a = gguf_arch_for(local_mla);
  ASSERT_FALSE(a);
  EXPECT_NE(a.status().message().find("llama.cpp's deepseek2 has no sliding-window"), std::string::npos);
  EXPECT_TRUE(gguf_arch_for(glm()));
  EXPECT_TRUE(gguf_arch_for(mla()));
}

}  // namespace
}  // namespace mt
