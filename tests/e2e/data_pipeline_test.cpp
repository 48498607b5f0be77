// data_pipeline_test.cpp — the data commands through the real binary:
// `data build` from a mixed synthetic corpus (JSONL, .jsonl.gz, .jsonl.zst,
// a code repository, rollouts), `data inspect` (table, JSON, heatmap),
// `data plan` (exit 0 / exit 3 naming buckets), `tokenizer train|encode`,
// `train` from dataset + mixture (bucket_tokens and per-bucket eval loss in
// metrics.jsonl, resume continues the exact data stream), and the bad-input
// cases (malformed JSONL, corrupted shard, tokenizer mismatch, unknown
// bucket, budget too small) each failing with a message naming the culprit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/data_fixtures.h"
#include "support/e2e.h"

namespace mt {
namespace {

using ::testing::HasSubstr;
namespace td = testdata;
namespace e2e = mt::e2e;

using e2e::moetrain;

// Writes the mixed corpus and data.toml under dir; returns the config path.
std::string write_corpus(const e2e::TempDir& dir) {
  td::write_file(dir / "web.jsonl", td::labelled_jsonl({"web"}, 3, 14, 1, 40));
  td::write_file(dir / "books.jsonl.gz", td::gzip(td::labelled_jsonl({"books"}, 3, 14, 2, 40)));
  td::write_file(dir / "math.jsonl.zst", td::zstd(td::labelled_jsonl({"math"}, 3, 14, 3, 40)));
  for (int r = 0; r < 6; ++r)
    for (int f = 0; f < 4; ++f)
      td::write_file(dir / ("repos/r" + std::to_string(r) + "/src/f" + std::to_string(f) + ".py"),
                     td::document(2, 60, uint64_t(r * 10 + f)));
  std::string roll;
  for (int i = 0; i < 30; ++i)
    roll += nlohmann::json{{"text", td::document(3, 50, uint64_t(i))}, {"outcome", i % 3 ? "success" : "failure"}}.dump() + "\n";
  td::write_file(dir / "rollouts.jsonl", roll);
  const std::string cfg = R"(
[[input]]
path = "web.jsonl"
[[input]]
path = "books.jsonl.gz"
[[input]]
path = "math.jsonl.zst"
[[input]]
path = "repos"
kind = "repos"
topic = "code"
quality = "q1"
[[input]]
path = "rollouts.jsonl"
kind = "rollouts"
topic = "agent"
quality = "q1"
[tokenizer]
vocab_size = 480
[split]
eval_frac = 0.2
)";
  td::write_file(dir / "data.toml", cfg);
  return dir / "data.toml";
}

class DataPipeline : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new e2e::TempDir();
    auto r = moetrain({"data", "build", "--config", write_corpus(*dir_), "--out", *dir_ / "ds", "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r;
    ds_ = *dir_ / "ds";
  }
  static void TearDownTestSuite() { delete dir_; }
  static e2e::TempDir* dir_;
  static std::string ds_;
};
e2e::TempDir* DataPipeline::dir_ = nullptr;
std::string DataPipeline::ds_;

TEST_F(DataPipeline, InspectShowsBucketsAndWritesHeatmap) {
  auto r = moetrain({"data", "inspect", ds_, "--json", "--html", *dir_ / "inspect.html"});
  ASSERT_EQ(r.exit_code, 0) << r;
  auto j = nlohmann::json::parse(r.out);
  std::set<std::string> names;
  double share = 0;
  for (const auto& b : j["buckets"]) {
    names.insert(b["name"].get<std::string>());
    share += b["share"].get<double>();
    EXPECT_GT(b["tokens"].get<int64_t>(), 0);
  }
  EXPECT_NEAR(share, 1.0, 1e-9);
  for (const char* n : {"web/q0", "web/q2", "books/q1", "math/q2", "code/q1", "agent/q1"}) EXPECT_TRUE(names.count(n)) << n;
  EXPECT_EQ(names.size(), 11u);
  const std::string svg = e2e::read_file(ds_ + "/heatmap.svg");
  EXPECT_THAT(svg, HasSubstr("<svg"));
  EXPECT_THAT(svg, HasSubstr(">books<"));
  EXPECT_THAT(e2e::read_file(*dir_ / "inspect.html"), HasSubstr("<table>"));
  auto text = moetrain({"data", "inspect", ds_, "--no-heatmap"});
  ASSERT_EQ(text.exit_code, 0) << text;
  EXPECT_THAT(text.out, HasSubstr("agent/q1"));
}

TEST_F(DataPipeline, TokenizerEncodesWithTheDatasetModel) {
  auto r = moetrain({"tokenizer", "encode", "--model", ds_ + "/tokenizer.model", "--text", "kamiro tu", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["ids"].size(), 0u);
  EXPECT_EQ(j["vocab_size"].get<int64_t>(), 480);
  EXPECT_TRUE(j["specials"].contains("<|success|>"));
  td::write_file(*dir_ / "tok_in.txt", td::document(0, 200, 5));
  auto t = moetrain(
      {"tokenizer", "train", "--input", *dir_ / "tok_in.txt", "--out", *dir_ / "t.model", "--vocab-size", "320"});
  ASSERT_EQ(t.exit_code, 0) << t;
  EXPECT_THAT(t.out, HasSubstr("pieces"));
  auto bad = moetrain({"tokenizer", "encode", "--model", *dir_ / "tok_in.txt", "--text", "x"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("not a SentencePiece model"));
}

TEST_F(DataPipeline, PlanPassesOrFailsNamingBuckets) {
  td::write_file(*dir_ / "small.toml", "total_tokens = 20000\nscale = \"1/4\"\n");
  auto ok = moetrain({"data", "plan", ds_, "--mixture", *dir_ / "small.toml", "--seq-len", "32", "--json"});
  ASSERT_EQ(ok.exit_code, 0) << ok;
  auto j = nlohmann::json::parse(ok.out);
  EXPECT_TRUE(j["ok"].get<bool>());
  EXPECT_EQ(j["sequences"].get<int64_t>(), 20000 / 32 / 4);
  td::write_file(*dir_ / "big.toml", "total_tokens = 2000000\n[weights]\n\"web/*\" = 1\n\"code/q1\" = 1\n");
  auto bad = moetrain({"data", "plan", ds_, "--mixture", *dir_ / "big.toml", "--seq-len", "32"});
  EXPECT_EQ(bad.exit_code, 3) << bad;
  for (const char* b : {"web/q0", "web/q1", "web/q2", "code/q1"}) EXPECT_THAT(bad.err, HasSubstr(std::string("bucket ") + b));
  EXPECT_THAT(bad.err, HasSubstr("short by"));
  EXPECT_THAT(bad.out, HasSubstr("repeats data"));
  td::write_file(*dir_ / "unknown.toml", "total_tokens = 2000\n[weights]\n\"prose/*\" = 1\n");
  auto unk = moetrain({"data", "plan", ds_, "--mixture", *dir_ / "unknown.toml"});
  EXPECT_EQ(unk.exit_code, 2) << unk;
  EXPECT_THAT(unk.err, HasSubstr("weights.\"prose/*\": unknown bucket"));
}

TEST_F(DataPipeline, TrainFromDatasetLogsLedgersAndResumesTheSameStream) {
  td::write_file(*dir_ / "mix.toml", "total_tokens = 8000\nscale = \"1/2\"\n[weights]\n\"*/q0\" = 1\n\"*/q1\" = 2\n");
  const std::vector<std::string> common = {"--preset", "tiny-test", "--set", "data.dataset=" + ds_, "--set",
                                           "data.mixture=" + (*dir_ / "mix.toml"), "--set", "model.vocab_size=512",
                                           "--set", "train.eval_every=3", "--set", "train.checkpoint_every=3",
                                           "--set", "train.seq_len=32"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = common;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  auto full = e2e::train(with({"--run-dir", *dir_ / "full", "--set", "train.steps=6"}), 300, e2e::kPassiveOmp);
  ASSERT_EQ(full.exit_code, 0) << full;
  auto part1 = e2e::train(with({"--run-dir", *dir_ / "resumed", "--set", "train.steps=3"}), 300, e2e::kPassiveOmp);
  ASSERT_EQ(part1.exit_code, 0) << part1;
  auto part2 = e2e::train(with({"--run-dir", *dir_ / "resumed", "--set", "train.steps=6", "--resume"}), 300,
                          e2e::kPassiveOmp);
  ASSERT_EQ(part2.exit_code, 0) << part2;
  EXPECT_EQ(e2e::resumed_from(part2.err).second, 3);
  EXPECT_EQ(e2e::done_state_hash(full.err), e2e::done_state_hash(part2.err));
  const auto a = e2e::read_metrics(*dir_ / "full"), b = e2e::read_metrics(*dir_ / "resumed");
  ASSERT_TRUE(e2e::has_steps_1_to_n(a, 6));
  ASSERT_TRUE(e2e::has_steps_1_to_n(b, 6));
  const int64_t per_step = 4 * 32;  // batch_size x seq_len
  for (size_t i = 0; i < 6; ++i) {
    ASSERT_TRUE(a[i].contains("bucket_tokens")) << a[i].dump();
    EXPECT_EQ(a[i]["bucket_tokens"], b[i]["bucket_tokens"]) << "step " << i + 1;
    EXPECT_EQ(a[i]["loss"], b[i]["loss"]);
    int64_t sum = 0;
    for (auto it = a[i]["bucket_tokens"].begin(); it != a[i]["bucket_tokens"].end(); ++it) sum += it.value().get<int64_t>();
    EXPECT_EQ(sum, int64_t(i + 1) * per_step);
  }
  ASSERT_TRUE(a[2].contains("bucket_eval_loss")) << a[2].dump();
  EXPECT_GT(a[2]["bucket_eval_loss"].size(), 5u);
  EXPECT_TRUE(a[2]["eval_loss"].is_number());
  EXPECT_EQ(a[5]["bucket_eval_loss"], b[5]["bucket_eval_loss"]);
  EXPECT_FALSE(a[1].contains("eval_loss"));

  // Budget too small for the steps asked.
  auto over = e2e::train(with({"--run-dir", *dir_ / "over", "--set", "train.steps=1000"}), 120, e2e::kPassiveOmp);
  EXPECT_NE(over.exit_code, 0);
  EXPECT_THAT(over.err, HasSubstr("mix.toml: the run reads 4000 sequences"));
  // A model vocabulary smaller than the tokenizer's.
  auto vocab = e2e::train(with({"--run-dir", *dir_ / "vocab", "--set", "model.vocab_size=320"}), 120, e2e::kPassiveOmp);
  EXPECT_NE(vocab.exit_code, 0);
  EXPECT_THAT(vocab.err, HasSubstr("model.vocab_size = 320 is smaller than the vocabulary"));
  // A mixture without a dataset.
  auto nods = e2e::train({"--preset", "tiny-test", "--set", "data.mixture=x.toml", "--run-dir", *dir_ / "nods"});
  EXPECT_NE(nods.exit_code, 0);
  EXPECT_THAT(nods.err, HasSubstr("data.dataset: required with data.mixture"));
}

// Document masking (train.document_mask, on by default): a query sees its own document only, fewer
// keys than the (T + 1) / 2 of a causal row, and the model FLOPs count those; without it the same
// data trains another model.
TEST_F(DataPipeline, DocumentMaskKeepsEachTokenToItsDocument) {
  td::write_file(*dir_ / "mix-docs.toml", "total_tokens = 8000\n[weights]\n\"*/q0\" = 1\n\"*/q1\" = 2\n");
  auto run = [&](const std::string& name, const std::string& mask) {
    auto r = e2e::train(
        {"--preset", "tiny-test", "--set", "data.dataset=" + ds_, "--set", "data.mixture=" + (*dir_ / "mix-docs.toml"),
         "--set", "model.vocab_size=512", "--set", "train.seq_len=256", "--set", "train.steps=2", "--set",
         "train.document_mask=" + mask, "--run-dir", *dir_ / name},
        300, e2e::kPassiveOmp);
    EXPECT_EQ(r.exit_code, 0) << r;
    return e2e::read_metrics(*dir_ / name);
  };
  const auto m = run("masked", "true"), u = run("unmasked", "false");
  ASSERT_TRUE(e2e::has_steps_1_to_n(m, 2));
  ASSERT_TRUE(e2e::has_steps_1_to_n(u, 2));
  ASSERT_TRUE(m[0].contains("keys_per_token")) << m[0].dump();
  const double keys = m[0]["keys_per_token"]["global"].get<double>();
  EXPECT_GT(keys, 1.0);
  EXPECT_LT(keys, 257.0 / 2);
  EXPECT_FALSE(u[0].contains("keys_per_token"));
  EXPECT_EQ(u[0]["bucket_tokens"], m[0]["bucket_tokens"]);
  EXPECT_NE(u[0]["loss"], m[0]["loss"]);
  // (That the FLOPs counted fall with the keys is model_flops_test's: here MFU / tokens per second would
  // compare two runs' own peak measurements, which a loaded machine moves.)
}

TEST_F(DataPipeline, BadInputsFailNamingTheCulprit) {
  // Malformed JSONL: file and line.
  td::write_file(*dir_ / "bad/in.jsonl", "{\"text\":\"fine\"}\n{\"text\":\"oops\"\n");
  td::write_file(*dir_ / "bad/data.toml", "[[input]]\npath = \"in.jsonl\"\n[tokenizer]\nvocab_size = 300\n");
  auto r = moetrain({"data", "build", "--config", *dir_ / "bad/data.toml", "--out", *dir_ / "bad/ds", "--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_THAT(r.err, HasSubstr("in.jsonl:2: malformed JSON"));
  EXPECT_FALSE(std::filesystem::exists(*dir_ / "bad/ds")) << "a failed build left an output";
  // on_error = "skip" counts it instead.
  td::write_file(*dir_ / "bad/skip.toml",
                 "[[input]]\npath = \"in.jsonl\"\non_error = \"skip\"\n[tokenizer]\nvocab_size = 300\n[topics]\nn_topics = 1\n");
  auto s = moetrain({"data", "build", "--config", *dir_ / "bad/skip.toml", "--out", *dir_ / "bad/ds2", "--quiet"});
  EXPECT_EQ(s.exit_code, 0) << s;
  EXPECT_THAT(s.out, HasSubstr("dropped malformed_json: 1"));
  // Unknown config key.
  td::write_file(*dir_ / "bad/key.toml", "[[input]]\npath = \"in.jsonl\"\ntext_feild = \"x\"\n");
  auto k = moetrain({"data", "build", "--config", *dir_ / "bad/key.toml", "--out", *dir_ / "bad/ds3"});
  EXPECT_EQ(k.exit_code, 2) << k;
  EXPECT_THAT(k.err, HasSubstr("key.toml:3: input[0].text_feild: unknown key"));
  // A corrupted shard in a copy of the dataset.
  const std::string copy = *dir_ / "bad/copy";
  std::filesystem::copy(ds_, copy, std::filesystem::copy_options::recursive);
  const std::string shard = copy + "/buckets/web/q1.train.tokens";
  std::string bytes = e2e::read_file(shard);
  bytes[bytes.size() / 2] ^= 0x40;
  e2e::write_file(shard, bytes);
  auto c = moetrain({"data", "inspect", copy});
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_THAT(c.err, HasSubstr("q1.train.tokens: token checksum mismatch"));
  e2e::write_file(shard, bytes.substr(0, bytes.size() - 7));
  auto t = moetrain({"data", "inspect", copy});
  EXPECT_THAT(t.err, HasSubstr("q1.train.tokens: " + std::to_string(bytes.size() - 7) + " bytes, header promises"));
  // Tokenizer mismatch: another tokenizer model dropped into the dataset.
  td::write_file(*dir_ / "bad/tok.txt", td::document(1, 300, 77));
  auto tt = moetrain({"tokenizer", "train", "--input", *dir_ / "bad/tok.txt", "--out", *dir_ / "bad/other.model",
                      "--vocab-size", "300"});
  ASSERT_EQ(tt.exit_code, 0) << tt;
  std::filesystem::copy_file(*dir_ / "bad/other.model", copy + "/tokenizer.model",
                             std::filesystem::copy_options::overwrite_existing);
  auto m = moetrain({"data", "inspect", copy});
  EXPECT_EQ(m.exit_code, 1);
  EXPECT_THAT(m.err, HasSubstr("tokenizer"));
}

}  // namespace
}  // namespace mt
