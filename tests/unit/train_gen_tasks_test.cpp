// train_gen_tasks_test.cpp — generative task files (train/gen_tasks.h) and
// telling them from multiple-choice ones (train/task_file.h): every reader
// error names FILE:LINE and the field; exact match is byte for byte, with the
// breakdowns by depth, length and cell and lm-eval's standard error; the
// continuation of a SentencePiece prompt decodes with its space; and greedy
// decoding on a real (random) model scores items whose answers are that
// model's own greedy continuations as right, and an altered one as wrong,
// in groups smaller than the file.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "model/generate.h"
#include "model/param_layout.h"
#include "model/weights.h"
#include "support/prose.h"
#include "support/temp_dir.h"
#include "train/gen_tasks.h"
#include "train/task_file.h"

namespace mt {
namespace {

std::string write(const testing::TempDir& tmp, const std::string& name, const std::string& text) {
  const std::string path = tmp.path() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

const char* kGood = R"({"id": "a", "family": "passkey", "prompt": "P1", "answer": " 1", "depth": 0.5, "tokens": 64})";

// The error of a generative file whose line 2 is `line` (line 1 is good).
std::string error_of(const std::string& line) {
  testing::TempDir tmp;
  const std::string path = write(tmp, "t.jsonl", std::string(kGood) + "\n" + line + "\n");
  auto r = read_task_file(path);
  EXPECT_FALSE(r.is_ok()) << line;
  const std::string m = r.status().message();
  EXPECT_EQ(m.rfind(path + ":2: ", 0), 0u) << m;
  return m.substr(path.size() + 4);
}

TEST(GenTasks, ReaderErrorsNameFileLineAndField) {
  // Each case: the line, and how its message starts.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"id": "b", "family": "x", "answer": " 1"})", "neither a multiple-choice item"},
      {R"({"id": "b", "family": "x", "prompt": 3, "answer": " 1"})", "\"prompt\": expected a non-empty string"},
      {R"({"id": "b", "family": "x", "prompt": "P", "answer": 1})", "\"answer\": expected a non-empty string"},
      {R"({"family": "x", "prompt": "P", "answer": " 1"})", "\"id\": expected a non-empty string"},
      {R"({"id": "b", "prompt": "P", "answer": " 1"})", "\"family\": expected a non-empty string"},
      {R"({"id": "a", "family": "x", "prompt": "P", "answer": " 1"})", "\"id\": \"a\" is also the id of line 1"},
      {R"({"id": "b", "family": "x", "prompt": "P", "answer": " 1", "depht": 0.5})", "\"depht\": unknown field"},
      {R"({"id": "b", "family": "passkey", "prompt": "P", "answer": " 1", "tokens": 64})", "\"depth\": a passkey item"},
      {R"({"id": "b", "family": "passkey", "prompt": "P", "answer": " 1", "depth": 0})", "\"tokens\": a passkey item"},
      {R"({"id": "b", "family": "x", "prompt": "P", "answer": " 1", "depth": 1.5})", "\"depth\": expected a number in"},
      {R"({"id": "b", "family": "x", "prompt": "P", "answer": " 1", "tokens": 0})",
       "\"tokens\": expected an integer >= 1"},
      {R"({"id": "b", "family": "x", "prompt": "P", "answer": " 1", "split": "test"})", "\"split\": expected"},
      {R"({"context": "c", "choices": ["a", "b"], "answer": 0})",
       "a multiple-choice item (\"context\", \"choices\") in a generative"},
      {R"([1, 2])", "not a JSON object"},
  };
  for (const auto& [line, start] : cases) {
    const std::string m = error_of(line);
    EXPECT_EQ(m.rfind(start, 0), 0u) << line << "\n -> " << m;
  }
}

TEST(GenTasks, FormatIsToldApartPerFile) {
  testing::TempDir tmp;
  const std::string mc = write(tmp, "mc.jsonl", "\n{\"context\": \"c\", \"choices\": [\"a\", \"b\"], \"answer\": 1}\n");
  const std::string gen = write(
      tmp, "gen.jsonl", std::string(kGood) + "\n\n" + R"({"id": "b", "family": "qa", "prompt": "Q", "answer": "A"})");
  auto a = read_task_file(mc), b = read_task_file(gen);
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  ASSERT_TRUE(b.is_ok()) << b.status().message();
  EXPECT_EQ(a.value().format, TaskFormat::kMultipleChoice);
  EXPECT_EQ(a.value().items(), 1);
  EXPECT_EQ(a.value().mc[0].line, 2);
  EXPECT_EQ(b.value().format, TaskFormat::kGenerative);
  EXPECT_EQ(b.value().name, "gen");
  ASSERT_EQ(b.value().items(), 2);
  EXPECT_EQ(b.value().gen[1].line, 3);
  EXPECT_EQ(b.value().gen[0].depth, 0.5);
  EXPECT_EQ(b.value().gen[0].tokens, 64);
  EXPECT_TRUE(std::isnan(b.value().gen[1].depth));
  EXPECT_EQ(b.value().hash.size(), 16u);
  // A generative line in a multiple-choice file, and a file of neither.
  const std::string mixed =
      write(tmp, "mixed.jsonl",
            "{\"context\": \"c\", \"choices\": [\"a\", \"b\"], \"answer\": 1}\n" + std::string(kGood) + "\n");
  EXPECT_EQ(read_task_file(mixed).status().message(),
            mixed + ":2: a generative item (\"prompt\") in a multiple-choice task file: one format per file");
  const std::string neither = write(tmp, "neither.jsonl", "{\"question\": \"q\"}\n");
  EXPECT_EQ(read_task_file(neither).status().message().rfind(neither + ":1: neither a multiple-choice item", 0), 0u);
  EXPECT_EQ(read_task_file(write(tmp, "empty.jsonl", "\n\n")).status().message(),
            tmp.path() + "/empty.jsonl: no items");
}

TEST(GenTasks, ItemLineRoundTrips) {
  GenItem it;
  it.id = "passkey-held-out-s1-000003";
  it.family = "passkey";
  it.split = "held-out";
  it.prompt = "Caf\xc3\xa9 \"quoted\"\nline. What is the pass key? The pass key is";
  it.answer = " 48213";
  it.depth = 0.75;
  it.tokens = 512;
  it.prompt_tokens = 509;
  it.needle_token = 377;
  const std::string line = gen_item_line(it);
  EXPECT_EQ(
      line.rfind("{\"id\":\"passkey-held-out-s1-000003\",\"family\":\"passkey\",\"split\":\"held-out\",\"prompt\":", 0),
      0u)
      << line;
  auto back = parse_gen_tasks("x.jsonl", line + "\n");
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  const GenItem& b = back.value()[0];
  EXPECT_EQ(b.prompt, it.prompt);
  EXPECT_EQ(b.answer, it.answer);
  EXPECT_EQ(b.depth, it.depth);
  EXPECT_EQ(b.tokens, it.tokens);
  EXPECT_EQ(b.prompt_tokens, it.prompt_tokens);
  EXPECT_EQ(b.needle_token, it.needle_token);
  EXPECT_EQ(b.split, it.split);
  EXPECT_EQ(gen_item_line(b), line);
}

GenItem item(const std::string& id, double depth, int64_t tokens, const std::string& answer) {
  GenItem it;
  it.id = id;
  it.family = "passkey";
  it.prompt = "...";
  it.answer = answer;
  it.depth = depth;
  it.tokens = tokens;
  return it;
}

TEST(GenTasks, ExactMatchAndBreakdowns) {
  const std::vector<GenItem> items = {item("a", 0.0, 256, " 48213"), item("b", 0.0, 512, " 11111"),
                                      item("c", 1.0, 256, " 22222"), item("d", 1.0, 512, " 33333"),
                                      item("e", 1.0, 512, " 44444")};
  // Only byte-for-byte equality counts: no space, a trailing space, another digit are all wrong.
  const std::vector<std::string> outputs = {" 48213", "11111", " 22222", " 33333 ", " 44445"};
  const GenResult r = tally_gen("pk", items, outputs);
  EXPECT_EQ(r.family, "passkey");
  EXPECT_EQ(r.correct, (std::vector<char>{1, 0, 1, 0, 0}));
  EXPECT_EQ(r.all.docs, 5);
  EXPECT_EQ(r.all.hits, 2);
  EXPECT_DOUBLE_EQ(r.all.acc(), 0.4);
  EXPECT_DOUBLE_EQ(r.all.acc_stderr(), std::sqrt(0.4 * 0.6 / 4.0));  // lm-eval: sqrt(p (1 - p) / (n - 1))
  EXPECT_EQ(r.by_depth.at(0.0).docs, 2);
  EXPECT_EQ(r.by_depth.at(0.0).hits, 1);
  EXPECT_EQ(r.by_depth.at(1.0).docs, 3);
  EXPECT_EQ(r.by_depth.at(1.0).hits, 1);
  EXPECT_EQ(r.by_tokens.at(256).hits, 2);
  EXPECT_EQ(r.by_tokens.at(512).hits, 0);
  EXPECT_EQ(r.by_tokens.at(512).docs, 3);
  EXPECT_EQ(r.by_cell.at({512, 1.0}).docs, 2);
  const nlohmann::json j = to_json(r, items);
  EXPECT_EQ(j["metric"], "exact_match");
  EXPECT_EQ(j["by_depth"][1]["depth"], 1.0);
  EXPECT_EQ(j["by_depth"][1]["docs"], 3);
  EXPECT_DOUBLE_EQ(j["by_tokens"][0]["acc"].get<double>(), 1.0);
  EXPECT_EQ(j["by_tokens_depth"].size(), 4u);
  EXPECT_EQ(j["items"][3]["output"], " 33333 ");
  EXPECT_EQ(j["items"][3]["correct"], false);
  const std::string table = format_gen_result(r);
  EXPECT_NE(table.find("acc 0.4000 ± 0.2449"), std::string::npos) << table;
  EXPECT_NE(table.find("    0.00   1.000   0.000   0.500\n"), std::string::npos) << table;
  EXPECT_NE(table.find("     all   1.000   0.000   0.400\n"), std::string::npos) << table;
}

TEST(GenTasks, SentencePieceContinuationKeepsItsSpace) {
  testing::TempDir tmp;
  const std::string text = testing::prose(200, 5) + " The pass key is 48213. 90210 is it.";
  TokenizerTrainOptions opt;
  opt.vocab_size = 600;
  auto model = Tokenizer::train({std::string_view(text)}, opt);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  std::ofstream(tmp.path() + "/sp.model", std::ios::binary) << model.value();
  auto codec = TextCodec::open(tmp.path() + "/sp.model");
  ASSERT_TRUE(codec.is_ok());
  const std::vector<GenItem> items = {item("a", 0.5, 10, " 48213")};
  std::vector<std::vector<int32_t>> prompts;
  std::vector<int64_t> answer_tokens;
  std::vector<GenItem> one = items;
  one[0].prompt = "The pass key is";
  encode_gen(*codec.value(), one, prompts, answer_tokens);
  const std::vector<int32_t> whole = codec.value()->encode("The pass key is 48213");
  const std::vector<int32_t> prompt(prompts[0].begin() + 1, prompts[0].end());
  EXPECT_EQ(prompts[0][0], codec.value()->end_of_document());
  ASSERT_EQ(int64_t(whole.size()), int64_t(prompt.size()) + answer_tokens[0]);
  EXPECT_GE(answer_tokens[0], 5);  // digits are split: at least one token each
  const std::vector<int32_t> generated(whole.begin() + int64_t(prompt.size()), whole.end());
  EXPECT_EQ(continuation_text(*codec.value(), prompt, generated), " 48213");
}

// A random dense model: greedy decoding is deterministic, so its own
// continuations are the answers it must match.
TEST(GenTasks, GreedyDecodingMatchesTheModelsOwnContinuation) {
  ModelConfig c;
  c.vocab_size = 259;  // the byte tokenizer's
  c.d_model = 32;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.d_ff = 48;
  c.init_std = 0.3;
  ParamLayout layout;
  build_layout(c, layout);
  std::vector<float> params(size_t(layout.total()));
  init_params(params.data(), layout, c, 5);
  auto codec = std::move(TextCodec::open("").value());
  const std::vector<std::string> prompts = {"alpha", "beta gamma", "a",    "delta epsilon zeta", "eta", "theta iota",
                                            "kappa", "lambda mu",  "nu xi"};
  std::vector<GenItem> items;
  Decoder one(c, params.data(), nullptr, DecoderOptions{1, 64, 64, KvDtype::kF32});
  for (size_t p = 0; p < prompts.size(); ++p) {
    std::vector<int32_t> ids = {codec->end_of_document()};
    for (unsigned char ch : prompts[p]) ids.push_back(ch);
    GenerateOptions g;
    g.max_new_tokens = 3 + int64_t(p % 3);
    g.sampling.temperature = 0;
    const std::vector<int32_t> out = generate(one, {ids}, g).tokens[0];
    if (std::any_of(out.begin(), out.end(), [](int32_t t) { return t >= 256; })) continue;  // a special: no text
    GenItem it = item("i" + std::to_string(p), double(p % 2), 10, codec->decode(out.data(), int64_t(out.size())));
    it.prompt = prompts[p];
    items.push_back(it);
  }
  ASSERT_GE(items.size(), 5u);
  std::vector<char> want(items.size(), 1);
  items[1].answer.back() = char(items[1].answer.back() ^ 1);  // one byte off: wrong
  want[1] = 0;
  Decoder three(c, params.data(), nullptr, DecoderOptions{3, 64, 64, KvDtype::kF32});  // groups of 3
  int64_t last_done = 0;
  const GenResult r = score_gen(three, *codec, "own", items, [&](int64_t done, int64_t total) {
    EXPECT_EQ(total, int64_t(items.size()));
    last_done = done;
  });
  EXPECT_EQ(last_done, int64_t(items.size()));
  EXPECT_EQ(r.correct, want);
  EXPECT_EQ(r.all.hits, int64_t(items.size()) - 1);
  for (size_t i = 0; i < items.size(); ++i)
    if (i != 1) {
      EXPECT_EQ(r.outputs[i], items[i].answer) << i;
    }
}

}  // namespace
}  // namespace mt
