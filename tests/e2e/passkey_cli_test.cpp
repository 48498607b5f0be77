// passkey_cli_test.cpp — `moetrain tasks make passkey` and `moetrain eval` on
// generative task files, through the real binary: the same arguments write
// the same bytes and another seed others; train documents and a held-out task
// file share no key; the documents build into a bucket of their own with
// `data build` (docs/long-context.md's recipe); a tiny model trained a few
// steps is scored with accuracy per depth and length; an item whose answer is
// the model's own greedy continuation scores 1 and an altered one 0 (beside a
// multiple-choice file in the same call); prompts past train.seq_len are
// refused naming the item unless --past-seq-len; bad lines name FILE:LINE.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "support/data_fixtures.h"
#include "support/e2e.h"
#include "support/prose.h"

namespace mt::e2e {
namespace {

using nlohmann::json;

// A directory of prose for the filler, and a byte-level model trained on it
// (seq_len 256), once for the whole suite; removed at exit.
struct Trained {
  std::string filler, run;
};
const Trained& trained() {
  // Outlives the tests (ctest runs each in its own process) and goes at exit.
  static TempDir* tmp = new TempDir();
  static const int cleanup = std::atexit([] {
    std::error_code ec;
    fs::remove_all(tmp->path(), ec);
  });
  (void)cleanup;
  static Trained t = [] {
    Trained r;
    r.filler = tmp->path() + "/prose";
    fs::create_directories(r.filler);
    write_file(r.filler + "/a.txt", testing::prose(120, 1));
    write_file(r.filler + "/b.txt", testing::prose(120, 2));
    r.run = tmp->path() + "/run";
    const auto p = train({"--config", std::string(MT_SOURCE_DIR) + "/configs/tiny-test.toml", "--run-dir", r.run,
                          "--set", "data.path=" + r.filler, "--set", "train.seq_len=256", "--set", "train.steps=8",
                          "--set", "train.threads=2"});
    EXPECT_EQ(p.exit_code, 0) << p;
    return r;
  }();
  return t;
}

std::vector<std::string> make_args(const std::string& split, const std::string& seed, const std::string& tokens) {
  return {"tasks",    "make", "passkey",  "--n",     "12",       "--seed",         seed,          "--split", split,
          "--tokens", tokens, "--depths", "0,0.5,1", "--filler", trained().filler, "--tokenizer", "bytes"};
}

std::vector<json> read_jsonl(const std::string& path) {
  std::vector<json> out;
  std::istringstream in(read_file(path));
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

TEST(PasskeyCli, SameArgumentsSameBytesAndSplitsShareNoKey) {
  TempDir tmp;
  auto make = [&](std::vector<std::string> args, const std::vector<std::string>& extra) {
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = moetrain(args);
    EXPECT_EQ(r.exit_code, 0) << r;
    return r;
  };
  make(make_args("held-out", "3", "150,200"), {"--out", tmp / "a.jsonl"});
  make(make_args("held-out", "3", "150,200"), {"--out", tmp / "b.jsonl"});
  make(make_args("held-out", "4", "150,200"), {"--out", tmp / "c.jsonl"});
  const auto t = make(make_args("train", "3", "150,200"), {"--out", tmp / "t.jsonl", "--documents", tmp / "docs"});
  EXPECT_NE(t.out.find("12 passkey items, split train, seed 3"), std::string::npos) << t;
  EXPECT_EQ(read_file(tmp / "a.jsonl"), read_file(tmp / "b.jsonl"));
  EXPECT_NE(read_file(tmp / "a.jsonl"), read_file(tmp / "c.jsonl"));
  const std::vector<json> held = read_jsonl(tmp / "a.jsonl"), tr = read_jsonl(tmp / "t.jsonl");
  ASSERT_EQ(held.size(), 12u);
  ASSERT_EQ(tr.size(), 12u);
  std::set<std::string> held_keys;
  for (const json& j : held) held_keys.insert(j["answer"].get<std::string>());
  for (const json& j : tr) EXPECT_EQ(held_keys.count(j["answer"].get<std::string>()), 0u) << j["id"];
  // Items cycle through the depths, then the lengths.
  EXPECT_EQ(held[4]["depth"], 0.5);
  EXPECT_EQ(held[4]["tokens"], 200);
  EXPECT_EQ(held[4]["split"], "held-out");
  // One document per item, named by its id: the prompt, the answer and a newline.
  const std::vector<std::string> files = list_dir(tmp / "docs");
  ASSERT_EQ(files.size(), 12u);
  for (size_t i = 0; i < tr.size(); ++i) {
    EXPECT_EQ(files[i], tr[i]["id"].get<std::string>() + ".txt");
    EXPECT_EQ(read_file(tmp / ("docs/" + files[i])),
              tr[i]["prompt"].get<std::string>() + tr[i]["answer"].get<std::string>() + "\n");
  }
  // A documents directory that holds anything is never written into.
  const auto again = moetrain([&] {
    auto a = make_args("train", "5", "150");
    a.insert(a.end(), {"--documents", tmp / "docs"});
    return a;
  }());
  EXPECT_EQ(again.exit_code, 2) << again;
  EXPECT_NE(again.err.find("exists and is not empty"), std::string::npos) << again;
  EXPECT_EQ(list_dir(tmp / "docs").size(), 12u);
  // Lengths too short for the needle and question name the flag.
  const auto short_len = moetrain([&] {
    auto a = make_args("held-out", "3", "40");
    a.insert(a.end(), {"--out", tmp / "s.jsonl"});
    return a;
  }());
  EXPECT_EQ(short_len.exit_code, 2) << short_len;
  EXPECT_NE(short_len.err.find("--tokens: a prompt of 40 tokens"), std::string::npos) << short_len;
}

// The recipe of docs/long-context.md: the documents are one input of a data
// build (its own topic and quality: one bucket), counted in the tokenizer of
// the dataset they will be trained with.
TEST(PasskeyCli, DocumentsBuildIntoABucketOfTheirOwn) {
  TempDir tmp;
  const std::string corpus = tmp / "corpus.jsonl";  // build_labelled_dataset writes it
  const std::string base =
      testdata::build_labelled_dataset(tmp.path(), testdata::labelled_jsonl({"a", "b"}, 1, 40, 3, 40), 0.1, 600);
  auto args = make_args("train", "1", "300,600");
  args[4] = "30";      // --n
  args.back() = base;  // --tokenizer DATASET_DIR: lengths in the dataset's SentencePiece tokens
  args.insert(args.end(), {"--documents", tmp / "passkey-train"});
  const auto made = moetrain(args);
  ASSERT_EQ(made.exit_code, 0) << made;
  EXPECT_NE(made.out.find(base + "/tokenizer.model"), std::string::npos) << made;
  write_file(tmp / "data.toml",
             "[[input]]\npath = \"" + corpus + "\"\n\n[[input]]\npath = \"" + tmp / "passkey-train" +
                 "\"\nkind = \"text\"\ntopic = \"passkey\"\nquality = \"q0\"\n\n[tokenizer]\nmodel = \"" + base +
                 "/tokenizer.model\"\n");
  const auto built = moetrain({"data", "build", "--config", tmp / "data.toml", "--out", tmp / "ds", "--quiet"});
  ASSERT_EQ(built.exit_code, 0) << built;
  const json m = json::parse(read_file(tmp / "ds/manifest.json"));
  bool found = false;
  for (const json& b : m["buckets"]) {
    if (b["name"] != "passkey/q0") continue;
    found = true;
    EXPECT_EQ(b["train"]["documents"].get<int64_t>() + b["eval"]["documents"].get<int64_t>(), 30) << b.dump();
  }
  EXPECT_TRUE(found) << m["buckets"].dump();
}

TEST(PasskeyCli, EvalScoresAccuracyPerDepthAndLength) {
  TempDir tmp;
  // --tokenizer RUN_DIR: the run's own (bytes: it trained on plain text).
  auto args = make_args("held-out", "9", "150,200");
  args.back() = trained().run;
  args.insert(args.end(), {"--out", tmp / "pk.jsonl"});
  const auto made = moetrain(args);
  ASSERT_EQ(made.exit_code, 0) << made;
  EXPECT_NE(made.out.find("byte tokenizer"), std::string::npos) << made;
  const auto r = moetrain({"eval", "--ckpt", trained().run, "--tasks", tmp / "pk.jsonl", "--out", tmp / "e.json",
                           "--no-progress", "--batch", "5"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.out.find("accuracy by needle depth (rows) and prompt length in tokens (columns)"), std::string::npos)
      << r;
  const json j = json::parse(read_file(tmp / "e.json"));
  ASSERT_EQ(j["tasks"].size(), 1u);
  const json& t = j["tasks"][0];
  const std::vector<json> items = read_jsonl(tmp / "pk.jsonl");
  EXPECT_EQ(t["task"], "pk");
  EXPECT_EQ(t["family"], "passkey");
  EXPECT_EQ(t["metric"], "exact_match");
  EXPECT_EQ(t["docs"], 12);
  ASSERT_EQ(t["by_depth"].size(), 3u);
  for (const json& d : t["by_depth"]) EXPECT_EQ(d["docs"], 4) << d;
  EXPECT_EQ(t["by_depth"][1]["depth"], 0.5);
  ASSERT_EQ(t["by_tokens"].size(), 2u);
  EXPECT_EQ(t["by_tokens"][1]["tokens"], 200);
  EXPECT_EQ(t["by_tokens_depth"].size(), 6u);
  ASSERT_EQ(t["items"].size(), 12u);
  int64_t hits = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const json& it = t["items"][i];
    EXPECT_EQ(it["id"], items[i]["id"]);
    EXPECT_EQ(it["correct"].get<bool>(), it["output"] == items[i]["answer"]) << it;
    hits += it["correct"].get<bool>() ? 1 : 0;
  }
  EXPECT_DOUBLE_EQ(t["acc"].get<double>(), double(hits) / 12.0);
}

// A check that can fail: the model's own greedy continuation of a prompt is
// the answer it must give (acc 1), one byte off it must miss.
TEST(PasskeyCli, ExactMatchOfTheModelsOwnGreedyContinuation) {
  TempDir tmp;
  std::string prompt, answer;
  for (const char* p : {"The river is", "Seven old roads", "A quiet garden under the", "Music across the city"}) {
    const auto g = moetrain({"generate", "--ckpt", trained().run, "--prompt", p, "--max-new-tokens", "5",
                             "--temperature", "0", "--no-stop", "--json", "--no-progress"});
    ASSERT_EQ(g.exit_code, 0) << g;
    // Its ASCII prefix: a special or a byte of a multi-byte character ends it.
    const json out = json::parse(g.out);
    std::string text;
    for (const json& id : out["samples"][0]["tokens"]) {
      const int v = id.get<int>();
      if (v < 1 || v >= 128) break;
      text += char(v);
    }
    if (text.empty()) continue;
    prompt = p, answer = text;
    break;
  }
  ASSERT_FALSE(answer.empty()) << "no prompt whose greedy continuation is ASCII";
  std::string wrong = answer;
  wrong.back() = wrong.back() == 'x' ? 'y' : 'x';
  json right_item = {{"id", "right"}, {"family", "copy"}, {"prompt", prompt}, {"answer", answer}};
  json wrong_item = {{"id", "wrong"}, {"family", "copy"}, {"prompt", prompt}, {"answer", wrong}};
  write_file(tmp / "own.jsonl", right_item.dump() + "\n" + wrong_item.dump() + "\n");
  write_file(tmp / "mc.jsonl", "{\"context\": \"alpha\", \"choices\": [\" beta\", \" gamma\"], \"answer\": 0}\n");
  const auto r = moetrain({"eval", "--ckpt", trained().run, "--tasks", tmp / "mc.jsonl", "--tasks", tmp / "own.jsonl",
                           "--out", tmp / "e.json", "--no-progress"});
  ASSERT_EQ(r.exit_code, 0) << r;
  const json j = json::parse(read_file(tmp / "e.json"));
  ASSERT_EQ(j["tasks"].size(), 2u);
  EXPECT_EQ(j["tasks"][0]["task"], "mc");
  EXPECT_TRUE(j["tasks"][0].contains("acc_norm"));  // multiple-choice, scored as before
  const json& own = j["tasks"][1];
  EXPECT_EQ(own["family"], "copy");
  EXPECT_DOUBLE_EQ(own["acc"].get<double>(), 0.5) << own.dump();
  EXPECT_EQ(own["items"][0]["output"], answer);
  EXPECT_EQ(own["items"][0]["correct"], true);
  EXPECT_EQ(own["items"][1]["output"], answer);
  EXPECT_EQ(own["items"][1]["correct"], false);
  EXPECT_TRUE(own["by_depth"].empty());  // no passkey metadata: no breakdowns
}

// One batch decodes as many tokens as its longest answer after every prompt:
// the longest prompt with a one-byte answer beside a short prompt with a long
// answer must fit the decoder (it once stopped on a failed check).
TEST(PasskeyCli, ABatchOfLongPromptsAndLongAnswersFitsTheDecoder) {
  TempDir tmp;
  json long_prompt = {{"id", "a"}, {"family", "copy"}, {"prompt", "Q: a prompt much longer than the other A:"},
                      {"answer", " x"}};
  json long_answer = {{"id", "b"}, {"family", "copy"}, {"prompt", "Q:"}, {"answer", " a long answer of bytes"}};
  write_file(tmp / "mixed.jsonl", long_prompt.dump() + "\n" + long_answer.dump() + "\n");
  const auto r = moetrain({"eval", "--ckpt", trained().run, "--tasks", tmp / "mixed.jsonl", "--no-held-out",
                           "--out", tmp / "e.json", "--no-progress"});
  ASSERT_EQ(r.exit_code, 0) << r;
  const json j = json::parse(read_file(tmp / "e.json"));
  EXPECT_EQ(j["tasks"][0]["docs"].get<int64_t>(), 2);
}

TEST(PasskeyCli, PromptsPastSeqLenAreRefusedNamingTheItem) {
  TempDir tmp;
  auto args = make_args("held-out", "2", "150,400");
  args.insert(args.end(), {"--out", tmp / "long.jsonl"});
  ASSERT_EQ(moetrain(args).exit_code, 0);
  const auto r = moetrain({"eval", "--ckpt", trained().run, "--tasks", tmp / "long.jsonl", "--no-held-out"});
  EXPECT_EQ(r.exit_code, 2) << r;
  const std::vector<json> items = read_jsonl(tmp / "long.jsonl");
  ASSERT_EQ(items[3]["tokens"], 400);  // the first long one: line 4
  EXPECT_NE(r.err.find(tmp / "long.jsonl" + ":4: item \"" + items[3]["id"].get<std::string>() + "\""),
            std::string::npos)
      << r;
  EXPECT_NE(r.err.find("past the 256 the model was trained on"), std::string::npos) << r;
  const auto past = moetrain({"eval", "--ckpt", trained().run, "--tasks", tmp / "long.jsonl", "--no-held-out",
                              "--past-seq-len", "--no-progress"});
  EXPECT_EQ(past.exit_code, 0) << past;
  EXPECT_NE(past.err.find("6 of 12 items need more than the 256 positions"), std::string::npos) << past;
}

TEST(PasskeyCli, BadGenerativeLineNamesFileLineAndField) {
  TempDir tmp;
  write_file(
      tmp / "bad.jsonl",
      "{\"id\": \"a\", \"family\": \"passkey\", \"prompt\": \"P\", \"answer\": \" 1\", \"depth\": 0, \"tokens\": 9}\n"
      "{\"id\": \"b\", \"family\": \"passkey\", \"prompt\": \"P\", \"answer\": \" 1\", \"tokens\": 9}\n");
  const auto r = moetrain({"eval", "--ckpt", trained().run, "--tasks", tmp / "bad.jsonl"});
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_NE(r.err.find(tmp / "bad.jsonl" + ":2: \"depth\": a passkey item needs it"), std::string::npos) << r;
}

}  // namespace
}  // namespace mt::e2e
