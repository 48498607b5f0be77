// data_decontaminate_cli_test.cpp — `moetrain data decontaminate` and what
// `moetrain eval` says about it, through the real binary: a corpus with two
// planted task items loses exactly those two documents, the table names the
// task and the buckets, the copy is a dataset `data inspect` and `train`
// open, a second pass finds nothing; eval of a model trained on the copy
// says it was decontaminated against that task file (by hash) and not
// against another, and the original dataset says "not decontaminated". Bad
// input is refused naming the file or the flag, and leaves nothing behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <nlohmann/json.hpp>

#include "core/hash.h"
#include "support/data_fixtures.h"
#include "support/e2e.h"

namespace mt::e2e {
namespace {

using nlohmann::json;

const std::string kQuestion = "Which ancient wonder of the world stood at the harbour of Rhodes until an earthquake in";

struct Fixture {
  std::string dir, dataset, clean, quiz, other, run;
  ProcessResult decon;
};

ProcessResult moetrain(std::vector<std::string> args, double timeout = 120) {
  args.insert(args.begin(), moetrain_binary());
  return run_process(args, timeout, kPassiveOmp);
}

// Built once for the suite: the dataset, its decontaminated copy, and a tiny
// model trained on the copy (a few seconds).
const Fixture& fixture() {
  static TempDir* tmp = new TempDir();
  static Fixture f = [] {
    Fixture r;
    r.dir = tmp->path();
    auto doc = [](const std::string& text, const char* topic) {
      return json{{"text", text}, {"topic", topic}, {"quality", 0}}.dump() + "\n";
    };
    std::string jsonl = testdata::labelled_jsonl({"a", "b"}, 1, 60, 3, 40);
    jsonl += doc(testdata::document(0, 50, 77) + kQuestion + " 226 BC?\n" + testdata::document(0, 30, 78), "a");
    jsonl += doc(testdata::document(1, 45, 79) + "Quiz: " + kQuestion + " 226 BC? The Colossus!\n", "b");
    // 7 words in common: no 8-gram.
    jsonl += doc(testdata::document(1, 45, 80) + "the harbour of Rhodes until an earthquake struck\n", "b");
    r.dataset = testdata::build_labelled_dataset(r.dir, jsonl, 0.3, 320);
    r.quiz = r.dir + "/quiz.jsonl";
    const json item = {
        {"context", kQuestion}, {"choices", {" 226 BC? The Colossus", " 226 BC? The Lighthouse"}}, {"answer", 0}};
    write_file(r.quiz,
               item.dump() + "\n" +
                   "{\"context\": \"Two plus two\", \"choices\": [\" is four\", \" is five\"], \"answer\": 0}\n");
    r.other = r.dir + "/other.jsonl";
    write_file(r.other,
               "{\"context\": \"The capital city of France is a place called\", \"choices\": [\" Paris "
               "on the Seine\", \" Rome\"], \"answer\": 0}\n");
    r.clean = r.dir + "/clean";
    r.decon = moetrain({"data", "decontaminate", r.dataset, "--tasks", r.quiz, "--out", r.clean});
    write_file(r.dir + "/mix.toml",
               "total_tokens = 4000\nscale = \"1\"\nmax_epochs = 1\nseed = 3\n[weights]\n\"*\" = 1\n");
    write_file(r.dir + "/run.toml", read_file(std::string(MT_SOURCE_DIR) + "/configs/tiny-test.toml") + "dataset = \"" +
                                        r.clean + "\"\nmixture = \"" + r.dir + "/mix.toml\"\n");
    r.run = r.dir + "/run";
    const auto t = train({"--config", r.dir + "/run.toml", "--run-dir", r.run, "--set", "train.steps=8", "--set",
                          "train.eval_every=8", "--set", "train.threads=2"});
    EXPECT_EQ(t.exit_code, 0) << t;
    return r;
  }();
  return f;
}

std::string file_hash(const std::string& path) {
  const std::string b = read_file(path);
  return hex64(xxh64(b.data(), b.size()));
}

TEST(DecontaminateCli, ThePlantedDocumentsGoAndNothingElse) {
  const Fixture& f = fixture();
  ASSERT_EQ(f.decon.exit_code, 0) << f.decon;
  // The task row: 2 items, 1 too short, 1 matched, in 2 documents.
  std::istringstream lines(f.decon.out);
  std::vector<std::string> row;
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("quiz ", 0) == 0) {
      std::istringstream words(line);
      for (std::string w; words >> w;) row.push_back(w);
    }
  EXPECT_EQ(row, (std::vector<std::string>{"quiz", "2", "1", "1", "2", f.quiz, "(" + file_hash(f.quiz) + ")"}))
      << f.decon;
  EXPECT_NE(f.decon.out.find("wrote " + f.clean), std::string::npos) << f.decon;
  const json rep = json::parse(read_file(f.clean + "/decontamination.json"));
  ASSERT_EQ(rep["matches"].size(), 2u) << rep.dump(1);
  for (const json& m : rep["matches"]) {
    EXPECT_EQ(m["file"], f.quiz);
    EXPECT_EQ(m["item"], 1);
  }
  EXPECT_EQ(rep["buckets"].size(), 2u);
  // The copy opens, with two documents fewer and their tokens gone.
  const auto in = moetrain({"data", "inspect", f.dataset, "--json", "--no-heatmap"});
  const auto out = moetrain({"data", "inspect", f.clean, "--json", "--no-heatmap"});
  ASSERT_EQ(in.exit_code, 0) << in;
  ASSERT_EQ(out.exit_code, 0) << out;
  const json a = json::parse(in.out)["totals"], b = json::parse(out.out)["totals"];
  EXPECT_EQ(a["train_documents"].get<int64_t>() + a["eval_documents"].get<int64_t>(),
            b["train_documents"].get<int64_t>() + b["eval_documents"].get<int64_t>() + 2);
  const json& tot = rep["totals"];
  EXPECT_EQ(a["train_tokens"].get<int64_t>() - b["train_tokens"].get<int64_t>(),
            tot["train"]["removed_tokens"].get<int64_t>());
  EXPECT_EQ(a["eval_tokens"].get<int64_t>() - b["eval_tokens"].get<int64_t>(),
            tot["eval"]["removed_tokens"].get<int64_t>());
  // A second pass finds nothing (dry run: nothing written).
  const auto again = moetrain({"data", "decontaminate", f.clean, "--tasks", f.quiz, "--dry-run", "--json"});
  ASSERT_EQ(again.exit_code, 0) << again;
  EXPECT_TRUE(json::parse(again.out)["matches"].empty()) << again.out;
  // At n = 6 and threshold 0 the 7-word near miss is found too.
  const auto loose = moetrain(
      {"data", "decontaminate", f.dataset, "--tasks", f.quiz, "--dry-run", "--json", "--n", "6", "--threshold", "0"});
  ASSERT_EQ(loose.exit_code, 0) << loose;
  EXPECT_EQ(json::parse(loose.out)["matches"].size(), 3u) << loose.out;
}

TEST(DecontaminateCli, EvalSaysWhichDecontaminationTheDatasetHad) {
  const Fixture& f = fixture();
  TempDir tmp;
  const auto r = moetrain(
      {"eval", "--ckpt", f.run, "--tasks", f.quiz, "--tasks", f.other, "--no-progress", "--out", tmp / "eval.json"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.out.find("dataset decontaminated: n=8, threshold 0.5 against " + f.quiz + " (xxh64 " + file_hash(f.quiz) +
                       "); 2 documents"),
            std::string::npos)
      << r;
  const json j = json::parse(read_file(tmp / "eval.json"));
  EXPECT_EQ(j["dataset"]["path"], f.clean);
  const json& d = j["dataset"]["decontamination"];
  EXPECT_EQ(d["decontaminated"], true) << j.dump(1);
  ASSERT_EQ(d["passes"].size(), 1u);
  EXPECT_EQ(d["passes"][0]["n"], 8);
  EXPECT_EQ(d["passes"][0]["threshold"], 0.5);
  EXPECT_EQ(d["passes"][0]["tasks"][0]["hash"], file_hash(f.quiz));
  ASSERT_EQ(j["tasks"].size(), 2u);
  EXPECT_EQ(j["tasks"][0]["dataset_decontaminated_against"], true);
  EXPECT_EQ(j["tasks"][1]["dataset_decontaminated_against"], false);
  // The original dataset, named with --dataset: not decontaminated.
  const auto o = moetrain({"eval", "--ckpt", f.run, "--dataset", f.dataset, "--no-held-out", "--tasks", f.quiz,
                           "--no-progress", "--out", tmp / "orig.json"});
  ASSERT_EQ(o.exit_code, 0) << o;
  EXPECT_NE(o.out.find("dataset not decontaminated"), std::string::npos) << o;
  const json k = json::parse(read_file(tmp / "orig.json"));
  EXPECT_EQ(k["dataset"]["path"], f.dataset);
  EXPECT_EQ(k["dataset"]["decontamination"]["decontaminated"], false);
  EXPECT_EQ(k["tasks"][0]["dataset_decontaminated_against"], false);
}

TEST(DecontaminateCli, BadInputNamesTheFileOrFlagAndLeavesNothing) {
  const Fixture& f = fixture();
  TempDir tmp;
  const std::string out = tmp / "out";
  auto refused = [&](std::vector<std::string> args, int code, const std::string& needle) {
    args.insert(args.begin(), {"data", "decontaminate", f.dataset});
    const auto r = moetrain(args);
    EXPECT_EQ(r.exit_code, code) << r;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r;
    EXPECT_FALSE(std::filesystem::exists(out)) << r;
  };
  refused({"--tasks", tmp / "missing.jsonl", "--out", out}, 2, tmp / "missing.jsonl");
  const std::string bad = tmp / "bad.jsonl";
  write_file(bad, "{\"context\": \"a\", \"choices\": [\"b\", \"c\"], \"answer\": 0}\n{\"context\": 3}\n");
  refused({"--tasks", bad, "--out", out}, 2, bad + ":2: \"context\"");
  refused({"--tasks", f.quiz, "--out", out, "--n", "0"}, 2, "--n: 0");
  refused({"--tasks", f.quiz, "--out", out, "--threshold", "1.5"}, 2, "--threshold: 1.5");
  refused({"--tasks", f.quiz, "--out", out, "--threshold", "-0.1"}, 2, "--threshold");
  refused({"--tasks", f.quiz}, 2, "--dry-run");
  // Not a dataset; an output that holds something (kept as it was).
  const auto nd = moetrain({"data", "decontaminate", tmp / "nope", "--tasks", f.quiz, "--out", out});
  EXPECT_EQ(nd.exit_code, 1) << nd;
  EXPECT_NE(nd.err.find(tmp / "nope"), std::string::npos) << nd;
  std::filesystem::create_directories(out);
  write_file(out + "/mine.txt", "x");
  const auto busy = moetrain({"data", "decontaminate", f.dataset, "--tasks", f.quiz, "--out", out});
  EXPECT_EQ(busy.exit_code, 1) << busy;
  EXPECT_NE(busy.err.find("not an empty directory"), std::string::npos) << busy;
  EXPECT_EQ(read_file(out + "/mine.txt"), "x");
}

}  // namespace
}  // namespace mt::e2e
