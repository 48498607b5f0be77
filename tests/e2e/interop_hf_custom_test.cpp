// interop_hf_custom_test.cpp — every architecture preset through the
// project's Hugging Face modeling code (MoetrainForCausalLM, loaded with
// trust_remote_code): a tiny run of each is trained, exported with `moetrain
// export --format hf` and, in the interop venv,
//   - transformers loads it with no missing or unexpected tensors and its
//     logits equal moetrain's forward (dropless, as at inference) within
//     kLogitTol;
//   - its greedy generate() (the model's own cache per layer kind) gives
//     the 32 tokens `moetrain generate --temperature 0` gives, and the same
//     continuations for a left-padded batch;
//   - lm-evaluation-harness gives `moetrain eval`'s acc and acc_norm;
//   - MTP modules, where present, give moetrain's MTP loss;
//   - `moetrain import` takes the export back bit for bit.
// Presets: GQA + sliding windows (a model Qwen2MoeForCausalLM also holds,
// exported with --hf-class moetrain), the seed's recipe (latent MoE with its
// norms, post-MoE norm, QK-norm, 8:1 kv heads on global layers, sigmoid
// routing with the aux-loss-free bias, capacity drops in training), MLA,
// MTP, and a gated-delta hybrid.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/config_schema.h"
#include "model/config.h"
#include "model/transformer.h"
#include "support/e2e.h"
#include "train/inference_model.h"

namespace mt::e2e {
namespace {

using nlohmann::json;

// fp32 both sides, other summation orders (and the gated-delta recurrence
// against moetrain's chunked kernel): |hf - moetrain| <= tol * max(1, max |logit|).
constexpr double kLogitTol = 1e-5;
constexpr double kLogprobTol = 1e-4;
constexpr double kMtpLossTol = 1e-5;  // relative
constexpr int64_t kNewTokens = 32;

struct Preset {
  const char* name;
  const char* hf_class;
  std::vector<std::string> sets;
};

std::ostream& operator<<(std::ostream& os, const Preset& p) { return os << p.name; }

const std::vector<Preset>& presets() {
  static const std::vector<Preset> v = {
      {"gqa_swa",
       "moetrain",
       {"model.n_layers=4", "model.layer_pattern=\"LLLG\"", "model.window=8", "model.n_shared_experts=1",
        "model.n_dense_layers=1"}},
      {"seed_recipe",
       "auto",
       {"model.n_layers=4", "model.n_heads=8", "model.n_kv_heads=1", "model.n_kv_heads_local=4",
        "model.layer_pattern=\"LLLG\"", "model.window=8", "model.d_latent=32", "model.moe_out_norm=true",
        "model.qk_norm=true", "model.router_score=\"sigmoid\"", "model.aux_free_bias=true",
        "model.bias_update_rate=0.01", "model.n_shared_experts=1", "model.capacity_factor=1.25",
        "model.tied_embeddings=false"}},
      {"mla",
       "auto",
       {"model.attention=\"mla\"", "model.n_kv_heads=1", "model.q_lora_rank=32", "model.kv_lora_rank=24",
        "model.qk_nope_head_dim=16", "model.qk_rope_head_dim=8", "model.v_head_dim=16", "model.layer_pattern=\"LG\"",
        "model.window=8"}},
      {"mtp", "auto", {"model.mtp_depth=2", "model.layer_pattern=\"LG\"", "model.window=8"}},
      {"delta_hybrid",
       "auto",
       {"model.n_layers=4", "model.layer_pattern=\"DLDG\"", "model.window=8", "model.delta_heads=2",
        "model.delta_key_dim=16", "model.delta_value_dim=24", "model.delta_chunk=16", "model.n_shared_experts=1"}},
  };
  return v;
}

const char* kTasks =
    "{\"context\": \"alpha\", \"choices\": [\" beta\", \" zzzz qqqq\"], \"answer\": 0}\n"
    "{\"context\": \"gamma \", \"choices\": [\"delta\", \"x\", \"epsilon\"], \"answer\": 2}\n"
    "{\"context\": \"The quick brown\", \"choices\": [\" fox\", \" 42\"], \"answer\": 0}\n"
    "{\"context\": \"one two three\", \"choices\": [\" four\", \" five six\"], \"answer\": 1}\n"
    "{\"context\": \"lambda mu\", \"choices\": [\" nu\", \" xi\", \" pi\", \" rho\"], \"answer\": 3}\n";

const char* kPrompt = "the model said: ";
const char* kLongPrompt = "a longer prompt, so the batch pads the first one on the left: ";

std::string model_toml(ModelConfig c) {
  ConfigSchema s("model config");
  declare_keys(s, c);
  return s.to_toml();
}

class CustomCode : public ::testing::TestWithParam<Preset> {};

TEST_P(CustomCode, TransformersAndLmEvalComputeWhatMoetrainComputes) {
  const Preset& p = GetParam();
  std::string venv_error;
  const std::string py = interop_python(venv_error);
  ASSERT_FALSE(py.empty()) << venv_error << "interop venv missing (see InteropHf.VenvExists)";
  TempDir tmp;
  const auto t = train_tiny(tmp / "run", p.sets);
  ASSERT_EQ(t.exit_code, 0) << t;
  const auto x =
      run_process({moetrain_binary(), "export", "--ckpt", tmp / "run", "--out", tmp / "hf", "--hf-class", p.hf_class},
                  120, kPassiveOmp);
  ASSERT_EQ(x.exit_code, 0) << x;
  EXPECT_NE(x.out.find("as MoetrainForCausalLM"), std::string::npos) << x.out;

  auto m = load_inference_model(tmp / "run");
  ASSERT_TRUE(m) << m.status().message();
  auto codec = open_run_codec(m.value(), "");
  ASSERT_TRUE(codec) << codec.status().message();
  // Inference is dropless (model/decoder.h): compare with the training forward without capacity.
  ModelConfig c = m.value().cfg.model;
  c.capacity_factor = 0.0;
  const int32_t eod = codec.value()->end_of_document();
  auto with_eod = [&](const std::string& text) {
    std::vector<int32_t> ids = {eod};
    const std::vector<int32_t> enc = codec.value()->encode(text);
    ids.insert(ids.end(), enc.begin(), enc.end());
    return ids;
  };
  const std::vector<std::string> texts = {"alpha beta gamma delta epsilon zeta eta theta iota kappa",
                                          "  digits 12345 and a newline\nthen more"};
  std::vector<std::vector<int32_t>> seqs;
  for (const std::string& s : texts) seqs.push_back(with_eod(s));
  json req = {{"sequences", seqs},
              {"texts", texts},
              {"generate", {with_eod(kPrompt), with_eod(kLongPrompt)}},
              {"new_tokens", kNewTokens}};
  const int64_t T_mtp = 12;
  std::vector<int32_t> mtp_seq;
  if (c.mtp_depth > 0) {
    mtp_seq = with_eod("multi token prediction reads ahead of itself");
    ASSERT_GE(int64_t(mtp_seq.size()), T_mtp + 1 + c.mtp_depth);
    mtp_seq.resize(size_t(T_mtp + 1 + c.mtp_depth));
    req["mtp"] = {mtp_seq};
    req["mtp_positions"] = T_mtp;
  }
  write_file(tmp / "ids.json", req.dump());
  write_file(tmp / "tasks.jsonl", kTasks);
  const auto r =
      run_process({py, std::string(MT_SOURCE_DIR) + "/tools/interop/hf_check.py", "both", "--model", tmp / "hf",
                   "--ids", tmp / "ids.json", "--tasks", tmp / "tasks.jsonl", "--out", tmp / "hf.json"},
                  500, {"OMP_NUM_THREADS=2", "HF_HOME=" + tmp / "hf_home"});
  ASSERT_EQ(r.exit_code, 0) << r;
  const json out = json::parse(read_file(tmp / "hf.json"));
  EXPECT_EQ(out["architecture"], "MoetrainForCausalLM");
  for (const char* k : {"missing_keys", "unexpected_keys", "mismatched_keys"})
    EXPECT_TRUE(out[k].empty()) << k << out[k];
  for (size_t i = 0; i < seqs.size(); ++i) EXPECT_EQ(out["text_ids"][i].get<std::vector<int32_t>>(), seqs[i]);

  // Logits against the training forward.
  double worst = 0.0;
  for (size_t s = 0; s < seqs.size(); ++s) {
    const int64_t T = int64_t(seqs[s].size()), V = c.vocab_size;
    Transformer model(c, 1, T, MatmulPrecision::kFp32);
    std::vector<float> logits(size_t(T * V));
    model.forward_logits(m.value().params.data(), seqs[s].data(), m.value().bias(), logits.data());
    const json& hf = out["logits"][s];
    ASSERT_EQ(int64_t(hf.size()), T);
    double max_abs = 1.0, diff = 0.0;
    for (int64_t i = 0; i < T * V; ++i) {
      const double a = logits[size_t(i)], b = hf[size_t(i / V)][size_t(i % V)].get<double>();
      max_abs = std::max(max_abs, std::fabs(a));
      diff = std::max(diff, std::fabs(a - b));
    }
    worst = std::max(worst, diff / max_abs);
    EXPECT_LE(diff, kLogitTol * max_abs) << "sequence " << s;
  }

  // Greedy decoding: transformers' generate() with the model's cache against moetrain's KV-cache decoder.
  const auto g =
      run_process({moetrain_binary(), "generate", "--ckpt", tmp / "run", "--prompt", kPrompt, "--temperature", "0",
                   "--max-new-tokens", std::to_string(kNewTokens), "--no-stop", "--json", "--no-progress"},
                  120, kPassiveOmp);
  ASSERT_EQ(g.exit_code, 0) << g;
  const std::vector<int32_t> ours = json::parse(g.out)["samples"][0]["tokens"].get<std::vector<int32_t>>();
  EXPECT_EQ(int64_t(ours.size()), kNewTokens);
  EXPECT_EQ(out["generated"][0].get<std::vector<int32_t>>(), ours);
  // Left padding changes nothing: the batched continuations equal the single ones.
  EXPECT_EQ(out["generated_batched"], out["generated"]);

  // Multi-token prediction: the modules' loss over the same tokens.
  if (c.mtp_depth > 0) {
    Transformer model(c, 1, T_mtp, MatmulPrecision::kFp32);
    const ForwardStats st =
        model.forward(m.value().params.data(), mtp_seq.data(), m.value().bias(), Objective::kTraining);
    const double hf = out["mtp_loss"][0].get<double>();
    EXPECT_NEAR(hf, st.mtp_loss, kMtpLossTol * st.mtp_loss);
    std::printf("# %s: MTP loss transformers %.7f, moetrain %.7f\n", p.name, hf, st.mtp_loss);
  }

  // lm-evaluation-harness against moetrain eval.
  const auto e = run_process({moetrain_binary(), "eval", "--ckpt", tmp / "run", "--tasks", tmp / "tasks.jsonl",
                              "--no-held-out", "--out", tmp / "eval.json"},
                             120, kPassiveOmp);
  ASSERT_EQ(e.exit_code, 0) << e;
  const json mine = json::parse(read_file(tmp / "eval.json"))["tasks"][0];
  const json& theirs = out["lmeval"];
  ASSERT_EQ(theirs["docs"], mine["docs"]);
  EXPECT_EQ(theirs["acc"].get<double>(), mine["acc"].get<double>());
  EXPECT_EQ(theirs["acc_norm"].get<double>(), mine["acc_norm"].get<double>());
  double worst_lp = 0.0;
  for (size_t d = 0; d < mine["logprobs"].size(); ++d)
    for (size_t k = 0; k < mine["logprobs"][d].size(); ++k) {
      const double diff = std::fabs(theirs["logprobs"][d][k].get<double>() - mine["logprobs"][d][k].get<double>());
      worst_lp = std::max(worst_lp, diff);
      EXPECT_LE(diff, kLogprobTol) << "doc " << d << " choice " << k;
    }

  // Import takes the export back bit for bit (fp32), the router bias included.
  const auto i =
      run_process({moetrain_binary(), "import", "--hf", tmp / "hf", "--out", tmp / "back"}, 120, kPassiveOmp);
  ASSERT_EQ(i.exit_code, 0) << i;
  auto back = load_inference_model(tmp / "back");
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(model_toml(back.value().cfg.model), model_toml(m.value().cfg.model));
  ASSERT_EQ(back.value().params.size(), m.value().params.size());
  EXPECT_EQ(std::memcmp(back.value().params.data(), m.value().params.data(), m.value().params.size() * 4), 0);
  EXPECT_EQ(back.value().router_bias, m.value().router_bias);

  std::printf(
      "# %s: logits max relative difference %.3g; generate: %zu tokens equal; lm-eval acc %.3f acc_norm %.3f "
      "(moetrain eval %.3f %.3f), max |loglik diff| %.3g\n",
      p.name, worst, ours.size(), theirs["acc"].get<double>(), theirs["acc_norm"].get<double>(),
      mine["acc"].get<double>(), mine["acc_norm"].get<double>(), worst_lp);
}

// --dtype bf16, loaded by transformers as bfloat16 and computed in it: its
// logits against moetrain's bf16 forward (bf16 products, fp32 accumulation)
// of the same run, for the seed's recipe. Both round every product's operands
// to bf16, but torch also keeps activations in bf16 between operations, so
// the two differ by bf16 rounding: kBf16LogitTol of the largest logit.
constexpr double kBf16LogitTol = 3e-2;

TEST(InteropHf, CustomCodeBf16ExportComputesAsMoetrainsBf16Forward) {
  std::string venv_error;
  const std::string py = interop_python(venv_error);
  ASSERT_FALSE(py.empty()) << venv_error << "interop venv missing (see InteropHf.VenvExists)";
  const Preset& p = presets()[1];
  ASSERT_STREQ(p.name, "seed_recipe");
  TempDir tmp;
  const auto t = train_tiny(tmp / "run", p.sets);
  ASSERT_EQ(t.exit_code, 0) << t;
  const auto x = run_process(
      {moetrain_binary(), "export", "--ckpt", tmp / "run", "--out", tmp / "hf", "--dtype", "bf16"}, 120, kPassiveOmp);
  ASSERT_EQ(x.exit_code, 0) << x;
  auto m = load_inference_model(tmp / "run");
  ASSERT_TRUE(m) << m.status().message();
  auto codec = open_run_codec(m.value(), "");
  ASSERT_TRUE(codec) << codec.status().message();
  ModelConfig c = m.value().cfg.model;
  c.capacity_factor = 0.0;
  std::vector<int32_t> seq = {codec.value()->end_of_document()};
  for (int32_t id : codec.value()->encode("alpha beta gamma delta epsilon zeta eta theta iota kappa"))
    seq.push_back(id);
  write_file(tmp / "ids.json", json({{"sequences", {seq}}}).dump());
  const auto r = run_process({py, std::string(MT_SOURCE_DIR) + "/tools/interop/hf_check.py", "logits", "--model",
                              tmp / "hf", "--ids", tmp / "ids.json", "--out", tmp / "hf.json", "--dtype", "bfloat16"},
                             300, {"OMP_NUM_THREADS=2", "HF_HOME=" + tmp / "hf_home"});
  ASSERT_EQ(r.exit_code, 0) << r;
  const json out = json::parse(read_file(tmp / "hf.json"));
  for (const char* k : {"missing_keys", "unexpected_keys", "mismatched_keys"})
    EXPECT_TRUE(out[k].empty()) << k << out[k];
  const int64_t T = int64_t(seq.size()), V = c.vocab_size;
  Transformer model(c, 1, T, MatmulPrecision::kBf16);
  std::vector<float> logits(size_t(T * V));
  model.forward_logits(m.value().params.data(), seq.data(), m.value().bias(), logits.data());
  const json& hf = out["logits"][0];
  ASSERT_EQ(int64_t(hf.size()), T);
  double max_abs = 1.0, diff = 0.0;
  int64_t argmax_same = 0;
  for (int64_t i = 0; i < T; ++i) {
    int64_t a = 0, b = 0;
    for (int64_t v = 0; v < V; ++v) {
      const double ours = logits[size_t(i * V + v)], theirs = hf[size_t(i)][size_t(v)].get<double>();
      max_abs = std::max(max_abs, std::fabs(ours));
      diff = std::max(diff, std::fabs(ours - theirs));
      if (ours > logits[size_t(i * V + a)]) a = v;
      if (theirs > hf[size_t(i)][size_t(b)].get<double>()) b = v;
    }
    argmax_same += a == b;
  }
  EXPECT_LE(diff, kBf16LogitTol * max_abs);
  std::printf(
      "# bf16 export in bf16 transformers vs moetrain's bf16 forward: max |diff| %.4g = %.3g of max |logit| "
      "%.3g (tolerance %.0e); argmax equal at %lld of %lld positions\n",
      diff, diff / max_abs, max_abs, kBf16LogitTol, (long long)argmax_same, (long long)T);
}

INSTANTIATE_TEST_SUITE_P(InteropHf, CustomCode, ::testing::ValuesIn(presets()),
                         [](const ::testing::TestParamInfo<Preset>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace mt::e2e
