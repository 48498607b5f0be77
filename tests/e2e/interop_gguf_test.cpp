// interop_gguf_test.cpp — `moetrain export --format gguf` run by llama.cpp
// (the llama-cpp-python package in the interop venv): a tiny run of each
// preset is trained and exported, then llama.cpp
//   - tokenizes text into moetrain's ids (BOS = end of document);
//   - gives every position's logits within kF32LogitTol of moetrain's forward
//     (dropless, as at inference) from the f32 file, within kQ8LogitTol from
//     the Q8_0 file;
//   - continues a prompt greedily through its KV cache with the 32 tokens
//     `moetrain generate --temperature 0` gives (f32).
// Presets: a Qwen2-MoE-shaped model (GQA, a shared expert, a leading dense
// layer, softmax top-k renormalised) and one with QK-norm and sigmoid routing
// with the aux-loss-free bias, both as llama.cpp's glm4moe; multi-head latent
// attention with and without a query latent as deepseek2.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "model/transformer.h"
#include "support/data_fixtures.h"
#include "support/e2e.h"
#include "train/inference_model.h"

namespace mt::e2e {
namespace {

using nlohmann::json;

// f32 both sides (ggml's kernels against moetrain's, an f32 KV cache):
// |gguf - moetrain| <= tol * max(1, max |logit|).
constexpr double kF32LogitTol = 1e-5;
// Q8_0 rounds every weight of a matrix to one of 255 steps of its 32-value
// block's absolute maximum, and ggml rounds the activations multiplied with
// them to 8 bits too; where that moves a token to another expert its logits
// move further, by an amount that depends on the trained weights (which
// differ in their last bits between CPUs). Bounds on the largest and the
// mean difference, of max(1, max |logit|); measured at most 0.069 and 0.0018.
constexpr double kQ8LogitTol = 0.15;
constexpr double kQ8MeanLogitTol = 0.01;
constexpr int64_t kNewTokens = 32;

struct Preset {
  const char* name;
  const char* arch;
  std::vector<std::string> sets;
};

std::ostream& operator<<(std::ostream& os, const Preset& p) { return os << p.name; }

const std::vector<Preset>& presets() {
  static const std::vector<Preset> v = {
      {"qwen2moe_shaped",
       "glm4moe",
       {"model.n_layers=3", "model.n_dense_layers=1", "model.n_shared_experts=1", "model.router_renormalize=true"}},
      {"qk_norm_sigmoid_bias",
       "glm4moe",
       {"model.n_shared_experts=2", "model.qk_norm=true", "model.router_score=\"sigmoid\"", "model.aux_free_bias=true",
        "model.bias_update_rate=0.01", "model.tied_embeddings=false", "model.capacity_factor=1.25"}},
      {"mla_q_latent",
       "deepseek2",
       {"model.attention=\"mla\"", "model.n_kv_heads=1", "model.q_lora_rank=32", "model.kv_lora_rank=32",
        "model.qk_nope_head_dim=16", "model.qk_rope_head_dim=8", "model.v_head_dim=16", "model.n_shared_experts=1"}},
      {"mla_direct_q",
       "deepseek2",
       {"model.attention=\"mla\"", "model.n_kv_heads=1", "model.q_lora_rank=0", "model.kv_lora_rank=32",
        "model.qk_nope_head_dim=8", "model.qk_rope_head_dim=16", "model.v_head_dim=16", "model.n_shared_experts=1",
        "model.router_score=\"sigmoid\"", "model.aux_free_bias=true", "model.bias_update_rate=0.01"}},
  };
  return v;
}

class Gguf : public ::testing::TestWithParam<Preset> {};

// Runs gguf_check.py on `file`; returns its JSON (null on failure).
json llama_cpp(const std::string& py, const std::string& file, const std::string& ids, const std::string& out) {
  const auto r = run_process(
      {py, std::string(MT_SOURCE_DIR) + "/tools/interop/gguf_check.py", "--model", file, "--ids", ids, "--out", out},
      300, {"OMP_NUM_THREADS=2"});
  EXPECT_EQ(r.exit_code, 0) << r;
  return r.exit_code == 0 ? json::parse(read_file(out)) : json();
}

// max |a - b| and mean |a - b|, each over max(1, max |a|), the worst of the sequences.
struct LogitDiff {
  double max = 0.0, mean = 0.0;
};
LogitDiff compare(const std::vector<std::vector<float>>& ours, const json& theirs, int64_t V) {
  LogitDiff worst;
  for (size_t s = 0; s < ours.size(); ++s) {
    double max_abs = 1.0, diff = 0.0, sum = 0.0;
    const int64_t T = int64_t(ours[s].size()) / V;
    EXPECT_EQ(int64_t(theirs[s].size()), T);
    if (int64_t(theirs[s].size()) != T) return {1.0, 1.0};
    for (int64_t i = 0; i < T * V; ++i) {
      const double a = ours[s][size_t(i)], b = theirs[s][size_t(i / V)][size_t(i % V)].get<double>();
      max_abs = std::max(max_abs, std::fabs(a));
      diff = std::max(diff, std::fabs(a - b));
      sum += std::fabs(a - b);
    }
    worst.max = std::max(worst.max, diff / max_abs);
    worst.mean = std::max(worst.mean, sum / double(T * V) / max_abs);
  }
  return worst;
}

TEST_P(Gguf, LlamaCppComputesWhatMoetrainComputes) {
  const Preset& p = GetParam();
  std::string venv_error;
  const std::string py = interop_python(venv_error);
  ASSERT_FALSE(py.empty()) << venv_error << "interop venv missing (see InteropHf.VenvExists)";
  TempDir tmp;
  const auto t = train_tiny(tmp / "run", p.sets);
  ASSERT_EQ(t.exit_code, 0) << t;
  for (const char* dtype : {"fp32", "q8_0"}) {
    const auto x = run_process({moetrain_binary(), "export", "--ckpt", tmp / "run", "--format", "gguf", "--dtype",
                                dtype, "--out", tmp / dtype},
                               120, kPassiveOmp);
    ASSERT_EQ(x.exit_code, 0) << x;
    EXPECT_NE(x.out.find(std::string("as GGUF ") + p.arch), std::string::npos) << x.out;
  }

  auto m = load_inference_model(tmp / "run");
  ASSERT_TRUE(m) << m.status().message();
  auto codec = open_run_codec(m.value(), "");
  ASSERT_TRUE(codec) << codec.status().message();
  ModelConfig c = m.value().cfg.model;
  c.capacity_factor = 0.0;  // inference is dropless (model/decoder.h)
  const int32_t eod = codec.value()->end_of_document();
  auto with_eod = [&](const std::string& text) {
    std::vector<int32_t> ids = {eod};
    for (int32_t id : codec.value()->encode(text)) ids.push_back(id);
    return ids;
  };
  const std::vector<std::string> texts = {"alpha beta gamma delta epsilon zeta eta theta",
                                          "  digits 12345, a newline\nand \xe2\x82\xac"};
  const std::string prompt = "the model said: ";
  std::vector<std::vector<int32_t>> seqs;
  for (const std::string& s : texts) seqs.push_back(with_eod(s));
  write_file(tmp / "ids.json",
             json({{"sequences", seqs}, {"texts", texts}, {"generate", {with_eod(prompt)}}, {"new_tokens", kNewTokens}})
                 .dump());
  std::vector<std::vector<float>> ours;
  for (const auto& seq : seqs) {
    const int64_t T = int64_t(seq.size());
    Transformer model(c, 1, T, MatmulPrecision::kFp32);
    ours.emplace_back(size_t(T * c.vocab_size));
    model.forward_logits(m.value().params.data(), seq.data(), m.value().bias(), ours.back().data());
  }

  const json f32 = llama_cpp(py, tmp / "fp32/model.gguf", tmp / "ids.json", tmp / "f32.json");
  ASSERT_FALSE(f32.is_null());
  EXPECT_EQ(f32["n_vocab"], c.vocab_size);
  for (size_t i = 0; i < seqs.size(); ++i)
    EXPECT_EQ(f32["text_ids"][i].get<std::vector<int32_t>>(), seqs[i]) << texts[i];
  const LogitDiff d32 = compare(ours, f32["logits"], c.vocab_size);
  EXPECT_LE(d32.max, kF32LogitTol);

  const auto g =
      run_process({moetrain_binary(), "generate", "--ckpt", tmp / "run", "--prompt", prompt, "--temperature", "0",
                   "--max-new-tokens", std::to_string(kNewTokens), "--no-stop", "--json", "--no-progress"},
                  120, kPassiveOmp);
  ASSERT_EQ(g.exit_code, 0) << g;
  const std::vector<int32_t> mine = json::parse(g.out)["samples"][0]["tokens"].get<std::vector<int32_t>>();
  EXPECT_EQ(f32["generated"][0].get<std::vector<int32_t>>(), mine);

  const json q8 = llama_cpp(py, tmp / "q8_0/model.gguf", tmp / "ids.json", tmp / "q8.json");
  ASSERT_FALSE(q8.is_null());
  const LogitDiff d8 = compare(ours, q8["logits"], c.vocab_size);
  EXPECT_LE(d8.max, kQ8LogitTol);
  EXPECT_LE(d8.mean, kQ8MeanLogitTol);
  int64_t same = 0;
  for (size_t i = 0; i < mine.size(); ++i) same += q8["generated"][0][i].get<int32_t>() == mine[i];
  std::printf(
      "# %s (%s): llama.cpp logits against moetrain's, of max(1, max |logit|): f32 max %.3g (tolerance "
      "%.0e); Q8_0 max %.3g (%.0e), mean %.3g (%.0e); greedy: f32 %zu of %zu tokens equal, Q8_0 %lld\n",
      p.name, p.arch, d32.max, kF32LogitTol, d8.max, kQ8LogitTol, d8.mean, kQ8MeanLogitTol, mine.size(), mine.size(),
      (long long)same);
}

INSTANTIATE_TEST_SUITE_P(InteropGguf, Gguf, ::testing::ValuesIn(presets()),
                         [](const ::testing::TestParamInfo<Preset>& i) { return std::string(i.param.name); });

// A SentencePiece run: llama.cpp's SPM tokenizer (the pieces, scores and
// types of the run's model, no space prefix) gives moetrain's ids, user-defined
// pieces ("\n") and byte fallback (characters the corpus never had) included.
TEST(InteropGguf, SentencePieceTokenizerGivesMoetrainsIds) {
  std::string venv_error;
  const std::string py = interop_python(venv_error);
  ASSERT_FALSE(py.empty()) << venv_error << "interop venv missing (see InteropHf.VenvExists)";
  TempDir tmp;
  const std::string ds =
      testdata::build_labelled_dataset(tmp.path(), testdata::labelled_jsonl({"a", "b"}, 1, 60, 3, 40), 0.3, 320);
  write_file(tmp / "mix.toml", "total_tokens = 8000\nscale = \"1\"\nmax_epochs = 1\nseed = 3\n[weights]\n\"*\" = 1\n");
  write_file(tmp / "run.toml", read_file(std::string(MT_SOURCE_DIR) + "/configs/tiny-test.toml") + "dataset = \"" + ds +
                                   "\"\nmixture = \"" + tmp / "mix.toml" + "\"\n");
  const auto t = train({"--config", tmp / "run.toml", "--run-dir", tmp / "run", "--set", "train.steps=4", "--set",
                        "model.n_shared_experts=1", "--set", "train.threads=2", "--no-progress"},
                       300);
  ASSERT_EQ(t.exit_code, 0) << t;
  const auto x =
      run_process({moetrain_binary(), "export", "--ckpt", tmp / "run", "--format", "gguf", "--out", tmp / "gguf"}, 120,
                  kPassiveOmp);
  ASSERT_EQ(x.exit_code, 0) << x;
  auto m = load_inference_model(tmp / "run");
  ASSERT_TRUE(m) << m.status().message();
  auto codec = open_run_codec(m.value(), "");
  ASSERT_TRUE(codec) << codec.status().message();
  ASSERT_TRUE(codec.value()->is_sentencepiece());
  const std::vector<std::string> texts = {"alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu",
                                          "  two leading spaces, digits 12345 and a newline\nthen more text\n\n",
                                          "unseen characters: \xe2\x82\xac \xe4\xb8\xad \xf0\x9f\x99\x82", "a"};
  write_file(tmp / "ids.json", json({{"texts", texts}}).dump());
  const json out = llama_cpp(py, tmp / "gguf/model.gguf", tmp / "ids.json", tmp / "out.json");
  ASSERT_FALSE(out.is_null());
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<int32_t> want = {codec.value()->end_of_document()};
    for (int32_t id : codec.value()->encode(texts[i])) want.push_back(id);
    EXPECT_EQ(out["text_ids"][i].get<std::vector<int32_t>>(), want) << texts[i];
  }
}

// What llama.cpp's architectures cannot run is refused before anything is
// written, exit code 3, naming the key.
TEST(InteropGguf, RefusesNamingTheKey) {
  TempDir tmp;
  const auto p = train({"--config", std::string(MT_SOURCE_DIR) + "/configs/tiny-test.toml", "--run-dir", tmp / "run",
                        "--set", "train.steps=1", "--set", "model.layer_pattern=\"LG\"", "--set", "model.window=8",
                        "--set", "model.n_shared_experts=1", "--no-progress"});
  ASSERT_EQ(p.exit_code, 0) << p;
  const auto r = run_process(
      {moetrain_binary(), "export", "--ckpt", tmp / "run", "--format", "gguf", "--out", tmp / "gguf"}, 60, kPassiveOmp);
  EXPECT_EQ(r.exit_code, 3) << r;
  EXPECT_NE(r.err.find("model.layer_pattern = \"LG\": llama.cpp's glm4moe has no sliding-window (L) layers"),
            std::string::npos)
      << r;
  EXPECT_FALSE(std::filesystem::exists(tmp / "gguf/model.gguf"));
  const auto d = run_process(
      {moetrain_binary(), "export", "--ckpt", tmp / "run", "--dtype", "q8_0", "--out", tmp / "hf"}, 60, kPassiveOmp);
  EXPECT_EQ(d.exit_code, 2) << d;
  EXPECT_NE(d.err.find("--dtype q8_0: only the gguf format stores it"), std::string::npos) << d;
}

}  // namespace
}  // namespace mt::e2e
