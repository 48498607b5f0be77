// interop_hf_test.cpp — a moetrain model in Hugging Face tools: a tiny MoE
// (shared expert, a leading dense layer, sliding-window and global layers,
// GQA) trained on a SentencePiece dataset, exported with `moetrain export
// --format hf`, then
//   - loaded by transformers (Qwen2MoeForCausalLM, fp32, CPU): no missing or
//     unexpected tensors, its tokenizer gives moetrain's ids, and its logits
//     equal moetrain's training forward within kLogitTol;
//   - scored by lm-evaluation-harness on a local multiple-choice JSONL task:
//     the same acc and acc_norm as `moetrain eval`, per-choice log-likelihoods
//     within kLogprobTol;
//   - the same for a byte-tokenizer run (tokenizer.json), untied, without a
//     shared expert, and for a bf16 export against its imported (rounded)
//     weights; and an export refused with exit 3 naming the feature.
// Python runs in the venv scripts/interop-venv.sh builds (scripts/test.sh
// builds it before ctest). Without it the test fails: it never skips.
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

// fp32 in both, different summation orders (oneDNN vs PyTorch GEMMs, expert
// sums in another order): |hf - moetrain| <= kLogitTol * max(1, max |logit|).
constexpr double kLogitTol = 1e-5;
// A sum of a few log-probabilities, each from such logits.
constexpr double kLogprobTol = 1e-4;

struct Exported {
  std::string run, hf, python, dir, venv_error;
};

// Trains and exports once for the whole suite, removed at exit.
const Exported& exported() {
  static TempDir* tmp = new TempDir();
  static Exported e = [] {
    Exported r;
    r.dir = tmp->path();
    r.python = interop_python(r.venv_error);
    const std::string ds = testdata::build_labelled_dataset(r.dir, testdata::labelled_jsonl({"a", "b"}, 1, 60, 3, 40),
                                                            0.3, 320);
    write_file(r.dir + "/mix.toml", "total_tokens = 8000\nscale = \"1\"\nmax_epochs = 1\nseed = 3\n[weights]\n\"*\" = 1\n");
    write_file(r.dir + "/run.toml", read_file(std::string(MT_SOURCE_DIR) + "/configs/tiny-test.toml") +
                                        "dataset = \"" + ds + "\"\nmixture = \"" + r.dir + "/mix.toml\"\n");
    r.run = r.dir + "/run";
    const auto p = train({"--config", r.dir + "/run.toml", "--run-dir", r.run, "--set", "train.steps=16", "--set",
                          "model.n_layers=3", "--set", "model.n_dense_layers=1", "--set", "model.n_shared_experts=1",
                          "--set", "model.layer_pattern=\"LG\"", "--set", "model.window=8", "--set",
                          "train.threads=2", "--no-progress"},
                         300);
    EXPECT_EQ(p.exit_code, 0) << p;
    r.hf = r.dir + "/hf";
    const auto x = run_process({moetrain_binary(), "export", "--ckpt", r.run, "--format", "hf", "--out", r.hf}, 120,
                               kPassiveOmp);
    EXPECT_EQ(x.exit_code, 0) << x;
    return r;
  }();
  return e;
}

ProcessResult python(const std::vector<std::string>& args, double timeout) {
  std::vector<std::string> argv = {exported().python, std::string(MT_SOURCE_DIR) + "/tools/interop/hf_check.py"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, timeout, {"OMP_NUM_THREADS=2"});
}

TEST(InteropHf, VenvExists) {
  ASSERT_FALSE(exported().python.empty())
      << exported().venv_error << "the interop venv is missing: run scripts/interop-venv.sh (scripts/test.sh does) "
      << "to install tools/interop/requirements.txt";
}

// Loads export `hf` of run `run` in transformers and compares, for each text
// (after the end-of-document id): its tokenizer's ids with moetrain's, and
// every position's logits with the training forward's. Returns the largest
// relative logit difference.
double check_against_transformers(const std::string& run, const std::string& hf, const std::string& dir,
                                  const std::vector<std::string>& texts) {
  auto m = load_inference_model(run);
  EXPECT_TRUE(m) << m.status().message();
  if (!m) return 1.0;
  auto codec = open_run_codec(m.value(), "");
  EXPECT_TRUE(codec) << codec.status().message();
  if (!codec) return 1.0;
  const ModelConfig& c = m.value().cfg.model;
  std::vector<std::vector<int32_t>> seqs;
  for (const std::string& t : texts) {
    std::vector<int32_t> ids = {codec.value()->end_of_document()};
    const std::vector<int32_t> enc = codec.value()->encode(t);
    ids.insert(ids.end(), enc.begin(), enc.end());
    seqs.push_back(ids);
  }
  write_file(dir + "/ids.json", json({{"sequences", seqs}, {"texts", texts}}).dump());
  const auto r = python({"logits", "--model", hf, "--ids", dir + "/ids.json", "--out", dir + "/logits.json"}, 300);
  EXPECT_EQ(r.exit_code, 0) << r;
  if (r.exit_code != 0) return 1.0;
  const json out = json::parse(read_file(dir + "/logits.json"));
  EXPECT_EQ(out["architecture"], "Qwen2MoeForCausalLM");
  for (const char* k : {"missing_keys", "unexpected_keys", "mismatched_keys"}) EXPECT_TRUE(out[k].empty()) << k << out[k];
  // The tokenizer transformers loads gives moetrain's ids (BOS = end of document).
  EXPECT_EQ(out["text_ids"].size(), seqs.size());
  for (size_t i = 0; i < seqs.size() && i < out["text_ids"].size(); ++i)
    EXPECT_EQ(out["text_ids"][i].get<std::vector<int32_t>>(), seqs[i]) << texts[i];
  double worst = 0.0;
  for (size_t s = 0; s < seqs.size(); ++s) {
    const int64_t T = int64_t(seqs[s].size()), V = c.vocab_size;
    Transformer t(c, 1, T, MatmulPrecision::kFp32);
    std::vector<float> logits(size_t(T * V));
    t.forward_logits(m.value().params.data(), seqs[s].data(), m.value().bias(), logits.data());
    const json& hf_logits = out["logits"][s];
    EXPECT_EQ(int64_t(hf_logits.size()), T);
    if (int64_t(hf_logits.size()) != T) return 1.0;
    double max_abs = 1.0, diff = 0.0;
    for (int64_t i = 0; i < T * V; ++i) {
      const double a = logits[size_t(i)], b = hf_logits[size_t(i / V)][size_t(i % V)].get<double>();
      max_abs = std::max(max_abs, std::fabs(a));
      diff = std::max(diff, std::fabs(a - b));
    }
    worst = std::max(worst, diff / max_abs);
    EXPECT_LE(diff, kLogitTol * max_abs) << "sequence " << s << " (" << T << " tokens)";
  }
  return worst;
}

TEST(InteropHf, TransformersLogitsEqualMoetrain) {
  const Exported& e = exported();
  ASSERT_FALSE(e.python.empty()) << "interop venv missing (see InteropHf.VenvExists)";
  // Longer than the window (8), so sliding and global layers differ.
  const double worst = check_against_transformers(
      e.run, e.hf, e.dir,
      {"alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho",
       "  two leading spaces, digits 12345 and a newline\nthen more text\n\n", "a"});
  std::printf("# transformers vs moetrain logits: max |diff| / max(1, max |logit|) = %.3g (tolerance %.0e)\n", worst,
              kLogitTol);
}

// --dtype bf16: transformers reads the BF16 tensors as the very values
// moetrain imports from them (each weight rounded to nearest even), so its
// fp32 logits equal moetrain's forward of the imported run.
TEST(InteropHf, Bf16ExportLoadsAsItsRoundedWeights) {
  const Exported& e = exported();
  ASSERT_FALSE(e.python.empty()) << "interop venv missing (see InteropHf.VenvExists)";
  TempDir tmp;
  const auto x = run_process({moetrain_binary(), "export", "--ckpt", e.run, "--dtype", "bf16", "--out", tmp / "hf"},
                             120, kPassiveOmp);
  ASSERT_EQ(x.exit_code, 0) << x;
  EXPECT_NE(x.out.find("MB of bf16 data"), std::string::npos) << x.out;
  const auto i = run_process({moetrain_binary(), "import", "--hf", tmp / "hf", "--out", tmp / "run"}, 120, kPassiveOmp);
  ASSERT_EQ(i.exit_code, 0) << i;
  const double worst = check_against_transformers(tmp / "run", tmp / "hf", tmp.path(), {"alpha beta gamma delta"});
  std::printf("# bf16 export: max relative logit difference %.3g\n", worst);
}

// A byte-tokenizer run (tokenizer.json), untied head, no shared expert (a
// zero-width one in transformers), all layers global.
TEST(InteropHf, ByteTokenizerRunUntiedNoSharedExpert) {
  ASSERT_FALSE(exported().python.empty()) << "interop venv missing (see InteropHf.VenvExists)";
  TempDir tmp;
  const auto p = train({"--config", std::string(MT_SOURCE_DIR) + "/configs/tiny-test.toml", "--run-dir", tmp / "run",
                        "--set", "train.steps=4", "--set", "model.tied_embeddings=false", "--set", "train.threads=2",
                        "--no-progress"});
  ASSERT_EQ(p.exit_code, 0) << p;
  const auto x = run_process({moetrain_binary(), "export", "--ckpt", tmp / "run", "--out", tmp / "hf"}, 60, kPassiveOmp);
  ASSERT_EQ(x.exit_code, 0) << x;
  const double worst =
      check_against_transformers(tmp / "run", tmp / "hf", tmp.path(), {"hi \xe2\x82\xac\n!", "byte by byte"});
  std::printf("# byte tokenizer run: max relative logit difference %.3g\n", worst);
}

TEST(InteropHf, LmEvalAccuracyEqualsMoetrainEval) {
  const Exported& e = exported();
  ASSERT_FALSE(e.python.empty()) << "interop venv missing (see InteropHf.VenvExists)";
  const std::string tasks = e.dir + "/toy.jsonl";
  write_file(tasks,
             "{\"context\": \"alpha\", \"choices\": [\" beta\", \" zzzz qqqq\"], \"answer\": 0}\n"
             "{\"context\": \"gamma \", \"choices\": [\"delta\", \"x\", \"epsilon\"], \"answer\": 2}\n"
             "{\"context\": \"The quick brown\", \"choices\": [\" fox\", \" 42\"], \"answer\": 0}\n"
             "{\"context\": \"one two three\", \"choices\": [\" four\", \" five six\", \"\\nseven\"], \"answer\": 1}\n"
             "{\"context\": \"digits 123\", \"choices\": [\"4\", \"45\", \" x\"], \"answer\": 1}\n"
             "{\"context\": \"b\", \"choices\": [\" a b\", \" b a\"], \"answer\": 0}\n"
             "{\"context\": \"lambda mu\", \"choices\": [\" nu\", \" xi\", \" pi\", \" rho\"], \"answer\": 3}\n"
             "{\"context\": \"theta\", \"choices\": [\" iota\", \" kappa\"], \"answer\": 1}\n");
  const auto me = run_process({moetrain_binary(), "eval", "--ckpt", e.run, "--tasks", tasks, "--no-held-out", "--out",
                               e.dir + "/eval.json"},
                              120, kPassiveOmp);
  ASSERT_EQ(me.exit_code, 0) << me;
  const auto lm = python({"lmeval", "--model", e.hf, "--tasks", tasks, "--out", e.dir + "/lmeval.json"}, 500);
  ASSERT_EQ(lm.exit_code, 0) << lm;
  const json ours = json::parse(read_file(e.dir + "/eval.json"))["tasks"][0];
  const json theirs = json::parse(read_file(e.dir + "/lmeval.json"));
  ASSERT_EQ(theirs["docs"], ours["docs"]);
  EXPECT_EQ(theirs["acc"].get<double>(), ours["acc"].get<double>());
  EXPECT_EQ(theirs["acc_norm"].get<double>(), ours["acc_norm"].get<double>());
  double worst = 0.0;
  for (size_t d = 0; d < ours["logprobs"].size(); ++d) {
    ASSERT_EQ(theirs["logprobs"][d].size(), ours["logprobs"][d].size()) << "doc " << d;
    for (size_t k = 0; k < ours["logprobs"][d].size(); ++k) {
      const double diff = std::fabs(theirs["logprobs"][d][k].get<double>() - ours["logprobs"][d][k].get<double>());
      worst = std::max(worst, diff);
      EXPECT_LE(diff, kLogprobTol) << "doc " << d << " choice " << k;
    }
  }
  std::printf("# lm-eval %s: acc %.4f acc_norm %.4f; moetrain eval: acc %.4f acc_norm %.4f; max |loglik diff| %.3g\n",
              theirs["lm_eval_version"].get<std::string>().c_str(), theirs["acc"].get<double>(),
              theirs["acc_norm"].get<double>(), ours["acc"].get<double>(), ours["acc_norm"].get<double>(), worst);
}

// Context extension: position interpolation and YaRN (its ramp over the RoPE
// pairs and its attention factor) export as transformers' rope_type and
// rotate there as here, on texts past the original length.
TEST(InteropHf, RopeScalingExportsAsTransformersRotates) {
  ASSERT_FALSE(exported().python.empty()) << "interop venv missing (see InteropHf.VenvExists)";
  for (const char* kind : {"linear", "yarn"}) {
    SCOPED_TRACE(kind);
    TempDir tmp;
    const auto p = train({"--config", std::string(MT_SOURCE_DIR) + "/configs/tiny-test.toml", "--run-dir", tmp / "run",
                          "--set", "train.steps=4", "--set", std::string("model.rope_scaling=\"") + kind + "\"",
                          "--set", "model.rope_factor=4.0", "--set", "model.rope_original_len=16", "--set",
                          "model.rope_theta=500.0", "--set", "train.threads=2", "--no-progress"});
    ASSERT_EQ(p.exit_code, 0) << p;
    const auto x =
        run_process({moetrain_binary(), "export", "--ckpt", tmp / "run", "--out", tmp / "hf"}, 60, kPassiveOmp);
    ASSERT_EQ(x.exit_code, 0) << x;
    const json cfg = json::parse(read_file(tmp / "hf/config.json"));
    EXPECT_EQ(cfg["rope_scaling"]["rope_type"], kind) << cfg.dump();
    const double worst = check_against_transformers(
        tmp / "run", tmp / "hf", tmp.path(),
        {"a text well past the sixteen positions the model was trained at before the extension", "short"});
    std::printf("# %s RoPE scaling: max relative logit difference %.3g\n", kind, worst);
  }
}

// --hf-class qwen2_moe on a model that class cannot hold: exit code 3 and
// the model.* key, before anything is written; auto takes the same model as
// custom code, and so does the raw format. A benchmark-only router is refused
// by the custom code too.
TEST(InteropHf, ExportRefusesNamingTheFeature) {
  TempDir tmp;
  const auto p = train({"--config", std::string(MT_SOURCE_DIR) + "/configs/tiny-test.toml", "--run-dir", tmp / "run",
                        "--set", "train.steps=1", "--set", "model.qk_norm=true", "--no-progress"});
  ASSERT_EQ(p.exit_code, 0) << p;
  const auto r =
      run_process({moetrain_binary(), "export", "--ckpt", tmp / "run", "--out", tmp / "hf", "--hf-class", "qwen2_moe"},
                  60, kPassiveOmp);
  EXPECT_EQ(r.exit_code, 3) << r;
  EXPECT_NE(r.err.find("model.qk_norm = true: RMSNorm on queries and keys has no counterpart in Qwen2MoeForCausalLM"),
            std::string::npos)
      << r;
  EXPECT_TRUE(list_dir(tmp / "hf").empty());
  const auto custom =
      run_process({moetrain_binary(), "export", "--ckpt", tmp / "run", "--out", tmp / "hf"}, 60, kPassiveOmp);
  EXPECT_EQ(custom.exit_code, 0) << custom;
  EXPECT_NE(custom.out.find("as MoetrainForCausalLM"), std::string::npos) << custom.out;
  const auto bench =
      train({"--config", std::string(MT_SOURCE_DIR) + "/configs/tiny-test.toml", "--run-dir", tmp / "bench", "--set",
             "train.steps=1", "--set", "model.router_force_balance=true", "--no-progress"});
  ASSERT_EQ(bench.exit_code, 0) << bench;
  const auto forced =
      run_process({moetrain_binary(), "export", "--ckpt", tmp / "bench", "--out", tmp / "hf2"}, 60, kPassiveOmp);
  EXPECT_EQ(forced.exit_code, 3) << forced;
  EXPECT_NE(forced.err.find("model.router_force_balance = true"), std::string::npos) << forced;
  const auto raw = run_process(
      {moetrain_binary(), "export", "--ckpt", tmp / "run", "--out", tmp / "raw", "--format", "safetensors"}, 60,
      kPassiveOmp);
  EXPECT_EQ(raw.exit_code, 0) << raw;
}

}  // namespace
}  // namespace mt::e2e
