// export_model_export_test.cpp — `moetrain export`/`import` without Python: an
// export (Hugging Face Qwen2MoeForCausalLM, or raw safetensors) read back by
// import gives the same parameters bit for bit and the same run config, for a
// table of models (shared experts, dense first layers, sliding-window layers,
// GQA, tied and untied heads, a dense model, no shared experts), sharded or
// not, with and without the run config export keeps in the metadata; every
// feature the architecture cannot represent is refused naming its key, and
// import refuses HF values moetrain has no counterpart for, naming them; a
// bf16 export holds each tensor rounded to nearest even, and import gives
// exactly those values back; the custom-code format (MoetrainForCausalLM) of
// the seed's recipe, MLA, MTP and gated-delta models round-trips the same way
// and refuses edited directories naming what. A failed write:
// export_safetensors_dir_test.
// The transformers/lm-eval side is tests/e2e/interop_hf_test.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "ckpt/checkpoint.h"
#include "core/bf16.h"
#include "core/config_schema.h"
#include "core/file_io.h"
#include "model/weights.h"
#include "support/e2e.h"
#include "support/random.h"
#include "export/model_export.h"

namespace mt {
namespace {

using e2e::TempDir;
namespace fs = std::filesystem;

ModelConfig moe() {
  ModelConfig c;
  c.vocab_size = 300;
  c.d_model = 32;
  c.n_layers = 3;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.layer_pattern = "LG";
  c.window = 5;
  c.d_ff = 48;
  c.n_experts = 4;
  c.top_k = 2;
  c.d_expert = 24;
  c.n_shared_experts = 2;
  c.n_dense_layers = 1;
  c.tied_embeddings = false;
  c.router_renormalize = false;
  c.capacity_factor = 1.25;
  return c;
}

struct Case {
  std::string name;
  ModelConfig c;
};

std::vector<Case> hf_cases() {
  std::vector<Case> v = {{"moe_shared_dense_local", moe()}};
  ModelConfig d = moe();
  d.n_experts = 0;
  d.n_shared_experts = 0;
  d.n_dense_layers = 0;
  d.tied_embeddings = true;
  d.layer_pattern = "G";
  v.push_back({"dense_tied_global", d});
  ModelConfig s = moe();
  s.n_shared_experts = 0;
  s.n_dense_layers = 0;
  s.layer_pattern = "LLLG";  // spelled longer than the 3 layers need: import must keep it
  s.rope_scaling = RopeScalingKind::kYarn;  // context extension survives the round trip
  s.rope_factor = 4.0;
  s.rope_original_len = 32;
  s.yarn_beta_fast = 16.0;
  s.router_renormalize = true;
  v.push_back({"moe_no_shared", s});
  return v;
}

// A run directory with one checkpoint of random parameters (norms too, so a
// transposed or misplaced tensor cannot hide behind a constant 1).
std::string make_run(const std::string& dir, const ModelConfig& c, uint64_t seed) {
  RunConfig cfg;
  cfg.model = c;
  cfg.train.seq_len = 32;
  ParamLayout L;
  build_layout(c, L);
  std::vector<float> p(size_t(L.total()));
  init_params(p.data(), L, c, seed);
  uint64_t draw = 0;
  auto uniform = [&](double lo, double hi) { return float(lo + (hi - lo) * testing::rand_u32(seed, 1, draw++) / 4294967296.0); };
  for (const ParamEntry& e : L.entries())
    if (e.kind == ParamKind::kNorm)
      for (int64_t i = 0; i < e.numel; ++i) p[size_t(e.offset + i)] = uniform(0.5, 1.5);
  std::vector<TensorView> views;
  for (const ParamEntry& e : L.entries()) views.push_back({e.name, e.shape, p.data() + e.offset});
  std::vector<float> bias;
  if (c.aux_free_bias) {
    int64_t moe_layers = 0;  // MoE blocks of the layers and of the MTP modules
    for (int64_t u = 0; u < c.n_units(); ++u) moe_layers += c.is_moe(u) ? 1 : 0;
    bias.resize(size_t(moe_layers * c.n_experts));
    for (float& b : bias) b = uniform(-0.1, 0.1);
    views.push_back({"router_bias", {int64_t(bias.size())}, bias.data()});
  }
  const std::string run = dir + "/run";
  EXPECT_TRUE(write_checkpoint(run + "/checkpoints", 7, views, to_toml(cfg), {{"step", 7}}, 0));
  return run;
}

// The resolved config, less the line naming the file it was read from.
std::string config_text(RunConfig c) {
  c.source.clear();
  return to_toml(c);
}

void expect_same_model(const InferenceModel& a, const InferenceModel& b) {
  EXPECT_EQ(config_text(a.cfg), config_text(b.cfg));
  ASSERT_EQ(a.params.size(), b.params.size());
  for (const ParamEntry& e : a.layout.entries())
    EXPECT_EQ(0, std::memcmp(a.params.data() + e.offset, b.params.data() + e.offset, size_t(e.numel) * 4)) << e.name;
  EXPECT_EQ(a.router_bias, b.router_bias);
  EXPECT_EQ(a.step, b.step);
}

InferenceModel load(const std::string& dir) {
  auto m = load_inference_model(dir);
  EXPECT_TRUE(m) << m.status().message();
  return m ? std::move(m.value()) : InferenceModel();
}

std::unique_ptr<TextCodec> bytes() { return std::move(TextCodec::open("").value()); }

TEST(ModelExport, HfRoundTripIsBitIdentical) {
  for (const Case& k : hf_cases()) {
    for (int64_t shard : {int64_t(5'000'000'000), int64_t(20'000)}) {
      SCOPED_TRACE(k.name + (shard < 1'000'000 ? " sharded" : ""));
      TempDir tmp;
      const InferenceModel a = load(make_run(tmp.path(), k.c, 11));
      ExportOptions opt;
      opt.out = tmp / "hf";
      opt.max_shard_bytes = shard;
      auto sum = export_model(a, *bytes(), opt);
      ASSERT_TRUE(sum) << sum.status().message();
      const bool sharded = fs::exists(tmp / "hf/model.safetensors.index.json");
      EXPECT_EQ(sharded, shard < 1'000'000);
      EXPECT_NE(fs::exists(tmp / "hf/model.safetensors"), sharded);
      for (const char* f : {"config.json", "tokenizer.json", "tokenizer_config.json"})
        EXPECT_TRUE(fs::exists(tmp / ("hf/" + std::string(f)))) << f;
      auto imp = import_model(tmp / "hf", tmp / "imp", -1);
      ASSERT_TRUE(imp) << imp.status().message();
      expect_same_model(a, load(tmp / "imp"));
    }
  }
}

// --dtype bf16: half the bytes, BF16 in every header, torch_dtype bfloat16,
// and import returns each parameter rounded to nearest even, bit for bit.
TEST(ModelExport, Bf16ExportsRoundToNearestEvenAndImportBack) {
  struct Kind {
    const char* name;
    ExportFormat format;
    HfClass cls;
  };
  for (const Kind& k : {Kind{"hf qwen2_moe", ExportFormat::kHf, HfClass::kQwen2Moe},
                        Kind{"hf custom code", ExportFormat::kHf, HfClass::kMoetrain},
                        Kind{"safetensors", ExportFormat::kSafetensors, HfClass::kAuto}}) {
    SCOPED_TRACE(k.name);
    const ExportFormat format = k.format;
    TempDir tmp;
    const InferenceModel a = load(make_run(tmp.path(), moe(), 13));
    ExportOptions f32, b16;
    f32.format = b16.format = format;
    f32.hf_class = b16.hf_class = k.cls;
    f32.out = tmp / "f32";
    b16.out = tmp / "bf16";
    b16.dtype = TensorDtype::kBf16;
    auto s32 = export_model(a, *bytes(), f32);
    auto s16 = export_model(a, *bytes(), b16);
    ASSERT_TRUE(s32 && s16);
    EXPECT_EQ(2 * s16.value().tensor_bytes, s32.value().tensor_bytes);
    auto st = read_safetensors_model(tmp / "bf16");
    ASSERT_TRUE(st) << st.status().message();
    const std::string head = e2e::read_file(tmp / "bf16/model.safetensors").substr(0, 4096);
    EXPECT_EQ(head.find("\"F32\""), std::string::npos);
    EXPECT_NE(head.find("\"BF16\""), std::string::npos);
    if (format == ExportFormat::kHf) {
      EXPECT_EQ(nlohmann::json::parse(e2e::read_file(tmp / "bf16/config.json"))["torch_dtype"], "bfloat16");
    }
    auto imp = import_model(tmp / "bf16", tmp / "imp", -1);
    ASSERT_TRUE(imp) << imp.status().message();
    const InferenceModel b = load(tmp / "imp");
    ASSERT_EQ(a.params.size(), b.params.size());
    int64_t changed = 0;
    for (size_t i = 0; i < a.params.size(); ++i) {
      const float want = bf16_to_f32(f32_to_bf16(a.params[i]));
      ASSERT_EQ(0, std::memcmp(&want, &b.params[i], 4)) << i;
      changed += a.params[i] != b.params[i];
    }
    EXPECT_GT(changed, int64_t(a.params.size() / 2)) << "random fp32 values are almost never bf16 already";
  }
}

// Without export's saved run config, the architecture comes from config.json
// alone: the same parameters, and the same model.* keys config.json speaks of.
TEST(ModelExport, HfImportFromConfigJsonAlone) {
  for (const Case& k : hf_cases()) {
    SCOPED_TRACE(k.name);
    TempDir tmp;
    const InferenceModel a = load(make_run(tmp.path(), k.c, 5));
    ExportOptions opt;
    opt.out = tmp / "hf";
    ASSERT_TRUE(export_model(a, *bytes(), opt));
    auto st = read_safetensors_model(tmp / "hf");
    ASSERT_TRUE(st);
    std::vector<NamedTensor> tensors;
    for (auto& [name, t] : st.value().tensors) tensors.push_back(t);
    ASSERT_TRUE(write_safetensors_shards(tmp / "hf", tensors, {}, 5'000'000'000));  // no moetrain metadata
    auto imp = import_model(tmp / "hf", tmp / "imp", -1);
    ASSERT_TRUE(imp) << imp.status().message();
    const InferenceModel b = load(tmp / "imp");
    EXPECT_EQ(b.step, 0);
    const ModelConfig &x = a.cfg.model, &y = b.cfg.model;
    EXPECT_EQ(x.vocab_size, y.vocab_size);
    EXPECT_EQ(x.d_model, y.d_model);
    EXPECT_EQ(x.n_kv_heads, y.n_kv_heads);
    EXPECT_EQ(x.n_experts, y.n_experts);
    EXPECT_EQ(x.n_shared_experts, y.n_shared_experts);
    EXPECT_EQ(x.n_dense_layers, y.n_dense_layers);
    EXPECT_EQ(x.tied_embeddings, y.tied_embeddings);
    if (x.n_experts > 0) {
      EXPECT_EQ(x.router_renormalize, y.router_renormalize);
    }
    for (int64_t l = 0; l < x.n_layers; ++l) EXPECT_EQ(x.is_local(l), y.is_local(l)) << l;
    ASSERT_EQ(a.params.size(), b.params.size());
    EXPECT_EQ(0, std::memcmp(a.params.data(), b.params.data(), a.params.size() * 4));
  }
}

// The raw format keeps what HF cannot: latent MoE, QK-norm, sigmoid routing
// with its aux-loss-free biases.
TEST(ModelExport, RawSafetensorsRoundTripKeepsEveryFeature) {
  ModelConfig c = moe();
  c.d_latent = 16;
  c.moe_out_norm = true;
  c.qk_norm = true;
  c.router_score = RouterScore::kSigmoid;
  c.aux_free_bias = true;
  c.n_kv_heads_local = 1;
  TempDir tmp;
  const InferenceModel a = load(make_run(tmp.path(), c, 3));
  ExportOptions opt;
  opt.format = ExportFormat::kSafetensors;
  opt.out = tmp / "raw";
  opt.max_shard_bytes = 30'000;
  ASSERT_TRUE(export_model(a, *bytes(), opt));
  EXPECT_TRUE(fs::exists(tmp / "raw/config.toml"));
  auto imp = import_model(tmp / "raw", tmp / "imp", -1);
  ASSERT_TRUE(imp) << imp.status().message();
  expect_same_model(a, load(tmp / "imp"));
}

TEST(ModelExport, HfRefusesWhatQwen2MoeCannotRepresent) {
  struct Refusal {
    std::string key;
    void (*set)(ModelConfig&);
  };
  const std::vector<Refusal> table = {
      {"model.d_latent", [](ModelConfig& c) { c.d_latent = 16; }},
      {"model.moe_out_norm", [](ModelConfig& c) { c.moe_out_norm = true; }},
      {"model.qk_norm", [](ModelConfig& c) { c.qk_norm = true; }},
      {"model.router_score", [](ModelConfig& c) { c.router_score = RouterScore::kSigmoid; }},
      {"model.aux_free_bias", [](ModelConfig& c) { c.aux_free_bias = true; }},
      {"model.n_kv_heads_local", [](ModelConfig& c) { c.n_kv_heads_local = 1; }},
      // Training-only modules: refused rather than dropped silently (the raw export keeps them).
      {"model.mtp_depth", [](ModelConfig& c) { c.mtp_depth = 1; }},
  };
  for (const Refusal& r : table) {
    SCOPED_TRACE(r.key);
    ModelConfig c = moe();
    r.set(c);
    const Status s = check_qwen2_moe(c);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.message().rfind(r.key + " = ", 0), 0u) << s.message();
    EXPECT_NE(s.message().find("Qwen2MoeForCausalLM"), std::string::npos) << s.message();
    TempDir tmp;
    const InferenceModel m = load(make_run(tmp.path(), c, 1));
    ExportOptions opt;
    opt.out = tmp / "hf";
    opt.hf_class = HfClass::kQwen2Moe;
    auto sum = export_model(m, *bytes(), opt);
    ASSERT_FALSE(sum);
    EXPECT_EQ(sum.status().message(), s.message());
    EXPECT_FALSE(fs::exists(tmp / "hf/model.safetensors"));  // refused before writing
    // auto: the project's modeling code holds it.
    opt.hf_class = HfClass::kAuto;
    auto custom = export_model(m, *bytes(), opt);
    ASSERT_TRUE(custom) << custom.status().message();
    EXPECT_EQ(custom.value().architecture, kHfCustomArchitecture);
  }
  EXPECT_TRUE(check_qwen2_moe(moe()));
}

// The custom-code export (MoetrainForCausalLM) of every architecture feature
// Qwen2MoeForCausalLM lacks: import gives the same run config, parameters and
// router biases bit for bit; from config.json alone (no saved run config) the
// same [model] table and parameters.
std::vector<Case> custom_cases() {
  ModelConfig seed = moe();  // the seed's recipe
  seed.n_heads = 8;
  seed.n_kv_heads = 1;
  seed.n_kv_heads_local = 4;
  seed.d_latent = 16;
  seed.moe_out_norm = true;
  seed.qk_norm = true;
  seed.router_score = RouterScore::kSigmoid;
  seed.aux_free_bias = true;
  ModelConfig mla = moe();
  mla.attention = AttentionKind::kMla;
  mla.n_kv_heads = 1;
  mla.q_lora_rank = 12;
  mla.kv_lora_rank = 10;
  mla.qk_nope_head_dim = 6;
  mla.qk_rope_head_dim = 4;
  mla.v_head_dim = 5;
  ModelConfig mtp = moe();
  mtp.mtp_depth = 2;
  mtp.aux_free_bias = true;  // biases for the modules' MoE blocks too
  ModelConfig delta = moe();
  delta.n_layers = 4;
  delta.layer_pattern = "DLDG";
  delta.delta_heads = 2;
  delta.delta_key_dim = 6;
  delta.delta_value_dim = 10;
  return {{"seed_recipe", seed}, {"mla", mla}, {"mtp", mtp}, {"delta_hybrid", delta}};
}

std::string model_toml(ModelConfig c) {
  ConfigSchema s("model config");
  declare_keys(s, c);
  return s.to_toml();
}

TEST(ModelExport, CustomCodeRoundTripIsBitIdentical) {
  for (const Case& k : custom_cases()) {
    SCOPED_TRACE(k.name);
    TempDir tmp;
    const InferenceModel a = load(make_run(tmp.path(), k.c, 17));
    ExportOptions opt;
    opt.out = tmp / "hf";
    // Sharded too: the index names every tensor's shard, import reads them all.
    ExportOptions sharded = opt;
    sharded.out = tmp / "sharded";
    sharded.max_shard_bytes = 20'000;
    ASSERT_TRUE(export_model(a, *bytes(), sharded));
    ASSERT_TRUE(fs::exists(tmp / "sharded/model.safetensors.index.json"));
    auto imp_sharded = import_model(tmp / "sharded", tmp / "imp_sharded", -1);
    ASSERT_TRUE(imp_sharded) << imp_sharded.status().message();
    expect_same_model(a, load(tmp / "imp_sharded"));
    auto sum = export_model(a, *bytes(), opt);
    ASSERT_TRUE(sum) << sum.status().message();
    EXPECT_EQ(sum.value().architecture, kHfCustomArchitecture);
    for (const char* f : {"config.json", "configuration_moetrain.py", "modeling_moetrain.py", "tokenizer.json"})
      EXPECT_TRUE(fs::exists(tmp / ("hf/" + std::string(f)))) << f;
    const auto cfg = nlohmann::json::parse(e2e::read_file(tmp / "hf/config.json"));
    EXPECT_EQ(cfg["auto_map"]["AutoModelForCausalLM"], "modeling_moetrain.MoetrainForCausalLM");
    EXPECT_EQ(cfg["moetrain_code_version"], kHfCodeVersion);
    auto imp = import_model(tmp / "hf", tmp / "imp", -1);
    ASSERT_TRUE(imp) << imp.status().message();
    expect_same_model(a, load(tmp / "imp"));

    // Without the saved run config: config.json's moetrain_model alone.
    auto st = read_safetensors_model(tmp / "hf");
    ASSERT_TRUE(st);
    std::vector<NamedTensor> tensors;
    for (auto& [name, t] : st.value().tensors) tensors.push_back(t);
    ASSERT_TRUE(write_safetensors_shards(tmp / "hf", tensors, {}, 5'000'000'000));
    auto bare = import_model(tmp / "hf", tmp / "bare", -1);
    ASSERT_TRUE(bare) << bare.status().message();
    const InferenceModel b = load(tmp / "bare");
    EXPECT_EQ(model_toml(b.cfg.model), model_toml(a.cfg.model));
    ASSERT_EQ(a.params.size(), b.params.size());
    EXPECT_EQ(0, std::memcmp(a.params.data(), b.params.data(), a.params.size() * 4));
    EXPECT_EQ(a.router_bias, b.router_bias);
  }
}

// The Python code and the C++ writer agree on the format version, and the
// binary carries both files.
TEST(ModelExport, CustomCodeFilesCarryTheFormatVersion) {
  std::map<std::string, std::string> files;
  for (const HfCodeFile& f : hf_code_files()) files[f.name] = f.text;
  ASSERT_EQ(files.size(), 2u);
  EXPECT_NE(files["configuration_moetrain.py"].find("MOETRAIN_CODE_VERSION = " + std::to_string(kHfCodeVersion) + "\n"),
            std::string::npos);
  EXPECT_NE(files["modeling_moetrain.py"].find("class MoetrainForCausalLM("), std::string::npos);
  EXPECT_EQ(moetrain_hf_name("head"), "lm_head.weight");
  EXPECT_EQ(moetrain_hf_name("layers.3.delta.A_log"), "model.layers.3.delta.A_log");
  EXPECT_EQ(moetrain_hf_name("mtp.0.proj"), "model.mtp.0.proj.weight");
}

// Benchmark-only routing has no model to export; a custom-code directory
// edited into something moetrain cannot read is refused naming what.
TEST(ModelExport, CustomCodeRefusalsNameTheKey) {
  ModelConfig forced = moe();
  forced.router_force_balance = true;
  const Status s = check_moetrain_hf(forced);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message().rfind("model.router_force_balance = true", 0), 0u) << s.message();
  auto r = resolve_hf_class(forced, HfClass::kAuto);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), s.message());

  TempDir tmp;
  ModelConfig c = custom_cases()[0].c;
  const InferenceModel a = load(make_run(tmp.path(), c, 2));
  ExportOptions opt;
  opt.out = tmp / "hf";
  ASSERT_TRUE(export_model(a, *bytes(), opt));
  auto st = read_safetensors_model(tmp / "hf");
  ASSERT_TRUE(st);
  const std::string config = read_file(tmp / "hf/config.json").value();
  struct Edit {
    std::string name, expect;
    std::string drop_tensor, add_tensor;  // remove one, or add a stray one
    std::string pointer, value;           // or replace a config.json value (JSON pointer)
  };
  const std::vector<Edit> edits = {
      {"missing", "tensor model.layers.1.moe.router_bias is missing", "model.layers.1.moe.router_bias", "", "", ""},
      {"stray", "tensor model.layers.0.extra.weight has no place", "", "model.layers.0.extra.weight", "", ""},
      {"version", "\"moetrain_code_version\" = 99", "", "", "/moetrain_code_version", "99"},
      {"key", "router_score", "", "", "/moetrain_model/router_score", "\"tanh\""},
      {"unknown", "model.n_expertz", "", "", "/moetrain_model/n_expertz", "4"},
  };
  for (const Edit& e : edits) {
    SCOPED_TRACE(e.name);
    const std::string dir = tmp / ("hf_" + e.name);
    fs::create_directories(dir);
    std::vector<NamedTensor> tensors;
    for (auto [name, t] : st.value().tensors)
      if (name != e.drop_tensor) tensors.push_back(t);
    if (!e.add_tensor.empty()) tensors.push_back({e.add_tensor, {2}, {1.0f, 2.0f}});
    ASSERT_TRUE(write_safetensors_shards(dir, tensors, st.value().metadata, 5'000'000'000));
    nlohmann::json j = nlohmann::json::parse(config);
    if (!e.pointer.empty()) j[nlohmann::json::json_pointer(e.pointer)] = nlohmann::json::parse(e.value);
    std::ofstream(dir + "/config.json") << j.dump(2);
    auto imp = import_model(dir, tmp / ("imp_" + e.name), -1);
    ASSERT_FALSE(imp);
    EXPECT_NE(imp.status().message().find(e.expect), std::string::npos) << imp.status().message();
    EXPECT_NE(imp.status().message().find(dir), std::string::npos) << imp.status().message();
  }
}

// An HF directory edited so that one value has no moetrain counterpart.
TEST(ModelExport, ImportRefusesWhatMoetrainCannotRepresent) {
  TempDir tmp;
  const InferenceModel a = load(make_run(tmp.path(), moe(), 2));
  ExportOptions opt;
  opt.out = tmp / "hf";
  ASSERT_TRUE(export_model(a, *bytes(), opt));
  auto st = read_safetensors_model(tmp / "hf");
  ASSERT_TRUE(st);
  const std::string config = read_file(tmp / "hf/config.json").value();
  struct Edit {
    std::string name, expect;
    std::string tensor;                  // set its first value to 0.5
    std::string key, value;              // or replace a config.json value
  };
  const std::vector<Edit> edits = {
      {"gate", "model.layers.1.mlp.shared_expert_gate.weight is not zero",
       "model.layers.1.mlp.shared_expert_gate.weight", "", ""},
      {"bias", "model.layers.2.self_attn.k_proj.bias is not zero", "model.layers.2.self_attn.k_proj.bias", "", ""},
      {"act", "\"hidden_act\" = \"gelu\"", "", "hidden_act", "\"gelu\""},
      {"dense", "\"mlp_only_layers\" = [1]", "", "mlp_only_layers", "[1]"},
      {"rope", "\"rope_scaling\"", "", "rope_scaling", "{\"rope_type\": \"dynamic\", \"factor\": 4.0}"},
      {"arch", "\"architectures\" = [\"MixtralForCausalLM\"]", "", "architectures", "[\"MixtralForCausalLM\"]"},
  };
  for (const Edit& e : edits) {
    SCOPED_TRACE(e.name);
    const std::string dir = tmp / ("hf_" + e.name);
    fs::create_directories(dir);
    std::vector<NamedTensor> tensors;
    for (auto [name, t] : st.value().tensors) {
      if (name == e.tensor) t.data[0] = 0.5f;
      tensors.push_back(t);
    }
    ASSERT_TRUE(write_safetensors_shards(dir, tensors, st.value().metadata, 5'000'000'000));
    nlohmann::json j = nlohmann::json::parse(config);
    if (!e.key.empty()) j[e.key] = nlohmann::json::parse(e.value);
    std::ofstream(dir + "/config.json") << j.dump(2);
    auto imp = import_model(dir, tmp / ("imp_" + e.name), -1);
    ASSERT_FALSE(imp);
    EXPECT_NE(imp.status().message().find(e.expect), std::string::npos) << imp.status().message();
  }
}

}  // namespace
}  // namespace mt
