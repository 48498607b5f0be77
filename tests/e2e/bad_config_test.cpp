// bad_config_test.cpp — every configuration mistake stops `moetrain train`
// before it trains: non-zero exit (2 for config errors) and a message on
// stderr naming the key, and the file when the mistake is in a file. Also: a
// resume whose model config differs from the checkpoint's is refused and
// leaves the run directory as it was.
#include <gtest/gtest.h>

#include <sstream>

#include "support/e2e.h"

namespace mt::e2e {
namespace {

struct Case {
  std::string name;
  // Edit of configs/tiny-test.toml written to a temp file, used with
  // --config; empty `from` = use the embedded tiny-test preset instead.
  std::string from, to;
  std::vector<std::string> sets;
  int exit_code;                      // expected; -1 = any non-zero
  std::vector<std::string> expect;    // substrings of stderr ("$FILE" = the config file's path)
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

const std::vector<Case>& cases() {
  static const std::vector<Case> k = {
      {"UnknownKeyInFile", "[train]\n", "[train]\nstpes = 30\n", {}, 2,
       {"$FILE", "train.stpes", "unknown key", "train.steps"}},  // with a did-you-mean
      {"UnknownSectionInFile", "[data]\n", "[optimizer]\nlr = 1.0\n\n[data]\n", {}, 2, {"$FILE", "optimizer"}},
      {"WrongTypeInFile", "[train]\n", "[train]\nlr = \"fast\"\n", {}, 2, {"$FILE", "train.lr", "float"}},
      {"WrongTypeBySet", "", "", {"train.steps=abc"}, 2, {"train.steps", "integer"}},
      {"WrongTypeBySetWithFile", "[train]\n", "[train]\n", {"model.top_k=1.5"}, 2, {"$FILE", "model.top_k"}},
      {"HeadsNotDividingDModelInFile", "n_heads = 4", "n_heads = 5", {}, 2, {"$FILE", "model.n_heads"}},
      {"HeadsNotDividingDModelBySet", "", "", {"model.n_heads=3"}, 2, {"model.n_heads"}},
      {"ZeroLrInFile", "[train]\n", "[train]\nlr = 0.0\n", {}, 2, {"$FILE", "train.lr", "> 0"}},
      {"ZeroLrBySet", "", "", {"train.lr=0"}, 2, {"train.lr", "> 0"}},
      {"TopKAboveExperts", "", "", {"model.top_k=5"}, 2, {"model.top_k"}},
      {"UnknownSetKey", "", "", {"train.bogus=1"}, 2, {"train.bogus", "unknown key"}},
      {"UnknownSetSection", "", "", {"optimizer.lr=1e-3"}, 2, {"--set optimizer.lr=1e-3", "optimizer: unknown table"}},
      {"MalformedSetNoEquals", "", "", {"train.lr"}, 2, {"--set train.lr", "expected key=value"}},
      {"MalformedSetNoSection", "", "", {"lr=1e-3"}, 2, {"--set lr=1e-3", "unknown key (did you mean 'train.lr'?)"}},
      {"BadPrecisionEnum", "", "", {"train.precision=fp16"}, 2, {"train.precision", "fp16", "bf16"}},
      {"BadPrecisionEnumInFile", "[train]\n", "[train]\nprecision = \"fp16\"\n", {}, 2,
       {"$FILE", "train.precision", "fp16"}},
      {"BadDataFormat", "", "", {"data.format=csv"}, 2, {"data.format", "csv"}},
      {"MissingDataPath", "", "", {"data.path=/nonexistent/moetrain-e2e-corpus"}, -1,
       {"data.path", "/nonexistent/moetrain-e2e-corpus"}},
  };
  return k;
}

class BadConfig : public ::testing::TestWithParam<Case> {};

TEST_P(BadConfig, FailsNamingTheKey) {
  const Case& c = GetParam();
  TempDir tmp;
  const std::string run = tmp / "run";
  std::vector<std::string> args;
  std::string file;
  if (c.from.empty()) {
    args = {"--preset", "tiny-test"};
  } else {
    std::string text = read_file(MT_SOURCE_DIR "/configs/tiny-test.toml");
    const size_t at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << "configs/tiny-test.toml has no '" << c.from << "'";
    text.replace(at, c.from.size(), c.to);
    file = tmp / "bad.toml";
    write_file(file, text);
    args = {"--config", file};
  }
  args.insert(args.end(), {"--run-dir", run, "--set", "train.threads=1"});
  for (const std::string& s : c.sets) args.insert(args.end(), {"--set", s});

  const auto r = train(args, 60);
  if (c.exit_code >= 0) EXPECT_EQ(r.exit_code, c.exit_code) << r;
  else EXPECT_GT(r.exit_code, 0) << r;
  for (std::string want : c.expect) {
    if (want == "$FILE") want = file;
    EXPECT_NE(r.err.find(want), std::string::npos) << "stderr lacks '" << want << "'\n" << r;
  }
  EXPECT_EQ(r.err.find("# done"), std::string::npos) << r;
  EXPECT_FALSE(fs::exists(run + "/metrics.jsonl")) << "a failed config still started training";
}

INSTANTIATE_TEST_SUITE_P(Cases, BadConfig, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

// The control: the unedited file and preset are accepted (so the cases above
// fail because of their edit, not because of the harness).
TEST(BadConfigControl, UneditedConfigTrains) {
  TempDir tmp;
  const auto r = train({"--config", MT_SOURCE_DIR "/configs/tiny-test.toml", "--run-dir", tmp / "run", "--set",
                        "train.threads=1", "--set", "train.steps=2"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_TRUE(has_steps_1_to_n(read_metrics(tmp / "run"), 2));
}

TEST(BadConfigControl, MissingConfigFile) {
  TempDir tmp;
  const std::string missing = tmp / "no-such-config.toml";
  const auto r = train({"--config", missing, "--run-dir", tmp / "run"});
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_NE(r.err.find(missing), std::string::npos) << r;
  EXPECT_FALSE(fs::exists(tmp / "run/metrics.jsonl"));
}

TEST(BadConfigControl, UnknownPreset) {
  TempDir tmp;
  const auto r = train({"--preset", "no-such-preset", "--run-dir", tmp / "run"});
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_NE(r.err.find("no-such-preset"), std::string::npos) << r;
}

// A resume may change only train.steps/checkpoint_every/keep_checkpoints/
// log_every/threads. A different model is refused, naming the checkpoint, and
// nothing in the run directory changes (metrics are not truncated).
TEST(BadConfigControl, ResumeWithChangedModelIsRefused) {
  TempDir tmp;
  const std::string run = tmp / "run";
  const std::vector<std::string> base = {"--preset", "tiny-test", "--run-dir", run, "--set", "train.threads=1",
                                         "--set", "train.steps=4"};
  const auto first = train(base);
  ASSERT_EQ(first.exit_code, 0) << first;
  const Inspect before = inspect(ckpt_dir(run, 4));
  ASSERT_TRUE(before.ok()) << before.proc;
  const std::string metrics_before = read_file(run + "/metrics.jsonl");

  for (const char* change : {"model.d_model=128", "model.n_experts=8", "train.lr=0.01", "train.seed=7"}) {
    SCOPED_TRACE(change);
    auto args = base;
    args.insert(args.end(), {"--set", "train.steps=8", "--set", change, "--resume"});
    const auto r = train(args);
    EXPECT_NE(r.exit_code, 0) << r;
    EXPECT_NE(r.err.find("different config"), std::string::npos) << r;
    EXPECT_NE(r.err.find(ckpt_dir(run, 4)), std::string::npos) << r;
    EXPECT_EQ(read_file(run + "/metrics.jsonl"), metrics_before);
    EXPECT_FALSE(fs::exists(ckpt_dir(run, 8)));
  }
  const Inspect after = inspect(ckpt_dir(run, 4));
  ASSERT_TRUE(after.ok()) << after.proc;
  EXPECT_EQ(after.tensor_hash(), before.tensor_hash());

  // Changing an allowed key (steps, threads) resumes.
  auto args = base;
  args.insert(args.end(), {"--set", "train.steps=6", "--set", "train.threads=2", "--resume"});
  const auto ok = train(args, 120, kPassiveOmp);
  EXPECT_EQ(ok.exit_code, 0) << ok;
  EXPECT_EQ(resumed_from(ok.err).second, 4) << ok;
  EXPECT_TRUE(has_steps_1_to_n(read_metrics(run), 6));
}

}  // namespace
}  // namespace mt::e2e

namespace mt::e2e {
namespace {

// docs/config.md is generated from the schemas; a key added without
// regenerating it (moetrain config reference > docs/config.md) fails here.
TEST(ConfigReference, DocsAreCurrent) {
  const ProcessResult r = run_process({moetrain_binary(), "config", "reference"});
  ASSERT_EQ(r.exit_code, 0) << r;
  std::ifstream in(std::string(MT_SOURCE_DIR) + "/docs/config.md");
  ASSERT_TRUE(in) << "docs/config.md missing";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_TRUE(ss.str() == r.out) << "docs/config.md is out of date: run `moetrain config reference > docs/config.md`";
  for (const char* key : {"`train.lr`", "`input[].path`", "`total_tokens`", "`topology.racks`", "`batch.global_batch`",
                          "`fit.alpha`", "`dist.ep`", "`weights`"})
    EXPECT_NE(r.out.find(key), std::string::npos) << key;
}

}  // namespace
}  // namespace mt::e2e
