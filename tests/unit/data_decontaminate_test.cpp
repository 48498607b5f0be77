// data_decontaminate_test.cpp — decontamination (data/decontaminate.h,
// data/decontaminate_dataset.h): the word normalisation and the coverage
// rule on texts; then a built corpus with planted task items (verbatim, with
// case and punctuation changed, a question with its answer, a long passage)
// next to near misses (a 7-word overlap at n = 8, a passage quoted below the
// threshold) and clean documents: exactly the planted documents go, the
// counts per bucket and per task are right, the copy opens with the input's
// tokens minus the removed ones, a second pass removes nothing, the scan
// does not depend on the thread count, and a failed write leaves nothing.
#include <gtest/gtest.h>
#include <omp.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/file_io.h"
#include "data/dataset.h"
#include "data/decontaminate.h"
#include "data/decontaminate_dataset.h"
#include "support/data_fixtures.h"
#include "support/faulty_file_system.h"
#include "support/temp_dir.h"

namespace mt {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// A multiple-choice item as `data decontaminate` reads one: context + each choice.
EvalItem mc_item(int64_t line, const std::string& context, const std::vector<std::string>& choices) {
  EvalItem it;
  it.line = line;
  for (const std::string& c : choices) it.sequences.push_back(context + c);
  return it;
}

const std::string kPlanet =
    "Which planet in our solar system is known as the red planet because of iron oxide on its surface?";  // 19 words
const std::string kFox = "The quick brown fox jumps over the lazy dog near the river bank at dawn, and then";  // 17
const std::string kPassage =  // 40 words
    "Photosynthesis converts light energy into chemical energy stored in glucose molecules while releasing oxygen "
    "as a byproduct of splitting water inside the thylakoid membranes of chloroplasts found in the leaves of green "
    "plants algae and some bacteria living in sunlit";

std::vector<EvalTask> tasks() {
  EvalTask quiz{"quiz", "quiz.jsonl", "00000000000000a1", {}};
  quiz.items.push_back(mc_item(1, kPlanet, {" Mars", " Venus", " Jupiter", " Saturn"}));
  quiz.items.push_back(mc_item(2, kFox, {" sleeps soundly", " flies away"}));
  quiz.items.push_back(mc_item(3, "Two plus two is", {" four", " five"}));  // 4-5 words: too short at n = 8
  EvalTask passage{"passage", "passage.jsonl", "00000000000000b2", {}};
  passage.items.push_back(mc_item(1, kPassage, {" water", " oceans"}));
  return {quiz, passage};
}

TEST(Decontaminate, WordsAreNormalisedAsLmEvalDoes) {
  EXPECT_EQ(normalized_words("Don't PANIC!  e.g. a-b\tcaf\xc3\xa9 -- x\n"),
            (std::vector<std::string>{"dont", "panic", "eg", "ab", "caf\xc3\xa9", "x"}));
  EXPECT_TRUE(normalized_words(" ... !!! ").empty());
  EXPECT_EQ(word_ngram_hashes("a b c", 2).size(), 2u);
  EXPECT_TRUE(word_ngram_hashes("a b c", 4).empty());
  // Word boundaries count: "ab c" is not "a bc".
  EXPECT_NE(word_ngram_hashes("ab c", 1)[0], word_ngram_hashes("a bc", 1)[0]);
  EXPECT_EQ(word_ngram_hashes("The, CAT sat", 3), word_ngram_hashes("the cat sat.", 3));
}

TEST(Decontaminate, BadOptionsNameTheFlag) {
  EXPECT_TRUE(check_decontam_options({8, 0.5}).is_ok());
  EXPECT_TRUE(check_decontam_options({1, 0}).is_ok());
  EXPECT_TRUE(check_decontam_options({13, 1}).is_ok());
  for (int64_t n : {0, -3}) {
    const Status s = check_decontam_options({n, 0.5});
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("--n"), std::string::npos) << s.message();
  }
  for (double t : {-0.01, 1.5, std::nan("")}) {
    const Status s = check_decontam_options({8, t});
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("--threshold"), std::string::npos) << s.message();
  }
}

TEST(Decontaminate, CoverageRuleOnTexts) {
  const NgramIndex idx(tasks(), {8, 0.5});
  EXPECT_EQ(idx.too_short(0), 1);
  EXPECT_EQ(idx.too_short(1), 0);
  // The question inside other text: 19 of 20 words of "question + Mars" covered.
  auto m = idx.match("lorem ipsum dolor " + kPlanet + " sit amet");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].task, 0);
  EXPECT_EQ(m[0].item, 0);
  EXPECT_DOUBLE_EQ(m[0].coverage, 19.0 / 20.0);
  // Case and punctuation do not hide it; the answer completes it.
  m = idx.match(
      "WHICH planet in our Solar System, is known as the 'red planet' because of iron oxide on its "
      "surface... MARS!");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_DOUBLE_EQ(m[0].coverage, 1.0);
  // Seven words in a row ("known as the red planet because of") at n = 8: nothing.
  EXPECT_TRUE(idx.match("we say it is well known as the red planet because of stories").empty());
  // Ten of the passage's 41 words: below 0.5, but found at threshold 0.
  const std::string ten = "chemical energy stored in glucose molecules while releasing oxygen as";
  EXPECT_TRUE(idx.match(ten).empty());
  const NgramIndex any(tasks(), {8, 0});
  m = any.match(ten);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_DOUBLE_EQ(m[0].coverage, 10.0 / 41.0);
  // Too-short items are never found, even verbatim.
  EXPECT_TRUE(idx.match("Two plus two is four").empty());
  // n = 4 finds it.
  EXPECT_EQ(NgramIndex(tasks(), {4, 0.5}).match("two plus two is four").size(), 1u);
}

// ---- a built corpus with planted items ----

struct Planted {
  std::string text, topic;
  int quality = 0;
  bool contaminated = false;
};

std::string host(int topic, int words, uint64_t seed) { return testdata::document(topic, words, seed); }

std::vector<Planted> planted() {
  return {
      {host(0, 60, 901) + kPlanet + "\n" + host(0, 50, 902), "a", 0, true},
      {host(1, 70, 903) +
           "WHICH planet in our Solar System, is known as the 'red planet' because of iron oxide on "
           "its surface... MARS!\n" +
           host(1, 40, 904),
       "b", 1, true},
      {host(0, 55, 905) + kFox + " sleeps soundly.\n" + host(0, 45, 906), "a", 1, true},
      {host(1, 80, 907) + kPassage + "\n" + host(1, 30, 908), "b", 0, true},
      // near misses: 7 words of the planet question, 10 of the passage's 41
      {host(1, 65, 909) + "we know it as the red planet because of stories\n" + host(1, 40, 910), "b", 0, false},
      {host(0, 75, 911) + "chemical energy stored in glucose molecules while releasing oxygen as\n" + host(0, 35, 912),
       "a", 0, false},
  };
}

// The corpus: clean labelled documents, then the planted ones; returns the
// JSONL and the lines (1-based) of the documents that must go.
std::string corpus(std::set<int64_t>& dirty_lines) {
  std::string jsonl = testdata::labelled_jsonl({"a", "b"}, 2, 25, 5, 60);
  int64_t line = std::count(jsonl.begin(), jsonl.end(), '\n');
  for (const Planted& p : planted()) {
    ++line;
    if (p.contaminated) dirty_lines.insert(line);
    jsonl += json{{"text", p.text}, {"topic", p.topic}, {"quality", p.quality}}.dump() + "\n";
  }
  return jsonl;
}

// Every document's provenance line, with its bucket and split.
std::vector<json> provenance(const Dataset& ds) {
  std::vector<json> out;
  for (const Bucket& b : ds.buckets())
    for (const char* split : {"train", "eval"}) {
      const std::string text = testdata::read_file(ds.dir() + "/" + shard_docs_file(b.topic, b.quality, split));
      size_t at = 0;
      while (at < text.size()) {
        const size_t nl = text.find('\n', at);
        json j = json::parse(text.substr(at, nl - at));
        j["bucket"] = b.name;
        j["split"] = split;
        out.push_back(j);
        at = nl + 1;
      }
    }
  return out;
}

class DecontaminateDataset : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path() + "/ds";
    fs::create_directories(dir_);
    in_ = testdata::build_labelled_dataset(dir_, corpus(dirty_lines_), 0.15, 400);
    auto ds = Dataset::open(in_);
    ASSERT_TRUE(ds.is_ok()) << ds.status().message();
    ds_ = std::move(ds.value());
    for (const json& p : provenance(*ds_))
      if (dirty_lines_.count(p["line"].get<int64_t>())) dirty_.push_back(p);
    ASSERT_EQ(dirty_.size(), dirty_lines_.size()) << "a planted document was dropped by the build";
  }
  Result<DecontamReport> scan(DecontamOptions opt = {8, 0.5}) { return scan_for_contamination(*ds_, tasks(), opt); }

  testing::TempDir tmp_;
  std::string dir_, in_;
  std::set<int64_t> dirty_lines_;
  std::vector<json> dirty_;  // provenance of the planted documents
  std::unique_ptr<Dataset> ds_;
};

TEST_F(DecontaminateDataset, ExactlyThePlantedDocumentsAreFound) {
  auto r = scan();
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  std::set<int64_t> want, got;
  for (const json& p : dirty_) want.insert(p["id"].get<int64_t>());
  for (const DecontamMatch& m : r.value().matches) got.insert(m.doc_id);
  EXPECT_EQ(got, want);
  // Which item each planted document holds: lines 1-2 of quiz, 1 of passage.
  std::map<int64_t, int64_t> line_of;  // document id -> corpus line
  for (const json& p : dirty_) line_of[p["id"].get<int64_t>()] = p["line"].get<int64_t>();
  std::map<int64_t, std::string> item_of;  // corpus line -> task:item found there
  for (const DecontamMatch& m : r.value().matches)
    item_of[line_of[m.doc_id]] = r.value().tasks[size_t(m.task)].name + ":" + std::to_string(m.line);
  std::vector<std::string> items;
  for (const auto& [line, item] : item_of) items.push_back(item);  // in corpus order
  EXPECT_EQ(items, (std::vector<std::string>{"quiz:1", "quiz:1", "quiz:2", "passage:1"}));
  // Per task.
  ASSERT_EQ(r.value().tasks.size(), 2u);
  const DecontamTaskStats& quiz = r.value().tasks[0];
  EXPECT_EQ(quiz.items, 3);
  EXPECT_EQ(quiz.too_short, 1);
  EXPECT_EQ(quiz.items_matched, 2);
  EXPECT_EQ(quiz.documents_matched, 3);
  EXPECT_EQ(quiz.hash, "00000000000000a1");
  const DecontamTaskStats& passage = r.value().tasks[1];
  EXPECT_EQ(passage.items, 1);
  EXPECT_EQ(passage.items_matched, 1);
  EXPECT_EQ(passage.documents_matched, 1);
  // Per bucket and split: documents and tokens, from the provenance files.
  std::map<std::pair<std::string, int>, std::pair<int64_t, int64_t>> want_removed;  // (bucket, split) -> docs, tokens
  for (const json& p : dirty_) {
    auto& w = want_removed[{p["bucket"].get<std::string>(), p["split"] == "eval" ? 1 : 0}];
    w.first += 1;
    w.second += p["tokens"].get<int64_t>();
  }
  ASSERT_EQ(r.value().buckets.size(), ds_->buckets().size());
  for (size_t b = 0; b < ds_->buckets().size(); ++b) {
    const DecontamBucketStats& bs = r.value().buckets[b];
    EXPECT_EQ(bs.name, ds_->buckets()[b].name);
    for (int s = 0; s < 2; ++s) {
      const ShardReader& sh = s ? *ds_->buckets()[b].eval : *ds_->buckets()[b].train;
      EXPECT_EQ(bs.documents[size_t(s)], sh.n_docs());
      EXPECT_EQ(bs.tokens[size_t(s)], sh.n_tokens());
      const auto w = want_removed[{bs.name, s}];
      EXPECT_EQ(bs.removed_documents[size_t(s)], w.first) << bs.name << " split " << s;
      EXPECT_EQ(bs.removed_tokens[size_t(s)], w.second) << bs.name << " split " << s;
    }
  }
  const json j = report_json(r.value());
  EXPECT_EQ(j["matches"].size(), 4u);
  EXPECT_EQ(j["n"], 8);
  EXPECT_EQ(j["tasks"][0]["too_short"], 1);
}

TEST_F(DecontaminateDataset, ThresholdZeroTakesAnySharedNgram) {
  auto r = scan({8, 0});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r.value().matches.size(), 5u);  // the 10-word quote of the passage too; never the 7-word one
  EXPECT_EQ(r.value().tasks[1].documents_matched, 2);
}

TEST_F(DecontaminateDataset, TheScanDoesNotDependOnThreads) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  auto one = scan();
  omp_set_num_threads(2);
  auto two = scan();
  omp_set_num_threads(before);
  ASSERT_TRUE(one.is_ok() && two.is_ok());
  json a = report_json(one.value()), b = report_json(two.value());
  a.erase("seconds");
  b.erase("seconds");
  EXPECT_EQ(a, b);
}

TEST_F(DecontaminateDataset, TheCopyOpensWithoutThemAndASecondPassRemovesNothing) {
  auto r = scan();
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  const std::string out = tmp_.path() + "/clean";
  Status s = write_decontaminated(*ds_, r.value(), out);
  ASSERT_TRUE(s.is_ok()) << s.message();
  auto clean = Dataset::open(out);
  ASSERT_TRUE(clean.is_ok()) << clean.status().message();
  ASSERT_EQ(clean.value()->buckets().size(), ds_->buckets().size());
  for (size_t b = 0; b < ds_->buckets().size(); ++b)
    for (int s2 = 0; s2 < 2; ++s2) {
      const ShardReader& in = s2 ? *ds_->buckets()[b].eval : *ds_->buckets()[b].train;
      const ShardReader& o = s2 ? *clean.value()->buckets()[b].eval : *clean.value()->buckets()[b].train;
      const DecontamBucketStats& bs = r.value().buckets[b];
      EXPECT_EQ(o.n_tokens(), in.n_tokens() - bs.removed_tokens[size_t(s2)]);
      EXPECT_EQ(o.n_docs(), in.n_docs() - bs.removed_documents[size_t(s2)]);
    }
  // The kept documents are the input's, in order, token for token.
  std::set<int64_t> gone;
  for (const json& p : dirty_) gone.insert(p["id"].get<int64_t>());
  std::vector<json> before = provenance(*ds_), after = provenance(*clean.value());
  std::vector<json> kept;
  for (const json& p : before)
    if (!gone.count(p["id"].get<int64_t>())) kept.push_back(p);
  EXPECT_EQ(after, kept);
  // The manifest records the pass; decontamination.json lists the matches.
  const json& m = clean.value()->manifest();
  ASSERT_TRUE(m.contains("decontamination")) << m.dump();
  ASSERT_EQ(m["decontamination"].size(), 1u);
  const json& pass = m["decontamination"][0];
  EXPECT_EQ(pass["n"], 8);
  EXPECT_EQ(pass["threshold"], 0.5);
  EXPECT_EQ(pass["tasks"][0]["hash"], "00000000000000a1");
  EXPECT_EQ(pass["source"]["fingerprint"], ds_->fingerprint());
  EXPECT_EQ(pass["totals"]["train"]["removed_documents"].get<int64_t>() +
                pass["totals"]["eval"]["removed_documents"].get<int64_t>(),
            4);
  EXPECT_EQ(m["totals"]["train_documents"].get<int64_t>() + m["totals"]["eval_documents"].get<int64_t>() + 4,
            ds_->manifest()["totals"]["train_documents"].get<int64_t>() +
                ds_->manifest()["totals"]["eval_documents"].get<int64_t>());
  const json rep = json::parse(testdata::read_file(out + "/decontamination.json"));
  EXPECT_EQ(rep["matches"].size(), 4u);
  // What eval reads.
  EXPECT_EQ(describe_decontamination(ds_->manifest()), "not decontaminated");
  EXPECT_EQ(decontamination_of(ds_->manifest())["decontaminated"], false);
  EXPECT_EQ(decontamination_of(m)["decontaminated"], true);
  const std::string line = describe_decontamination(m);
  EXPECT_NE(line.find("n=8, threshold 0.5 against quiz.jsonl (xxh64 00000000000000a1)"), std::string::npos) << line;
  EXPECT_NE(line.find("4 documents"), std::string::npos) << line;
  // Idempotent: nothing left to find; a second copy records both passes.
  auto again = scan_for_contamination(*clean.value(), tasks(), {8, 0.5});
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  EXPECT_TRUE(again.value().matches.empty());
  const std::string out2 = tmp_.path() + "/clean2";
  ASSERT_TRUE(write_decontaminated(*clean.value(), again.value(), out2).is_ok());
  auto clean2 = Dataset::open(out2);
  ASSERT_TRUE(clean2.is_ok()) << clean2.status().message();
  EXPECT_EQ(clean2.value()->manifest()["decontamination"].size(), 2u);
  EXPECT_EQ(clean2.value()->manifest()["totals"], m["totals"]);
}

TEST_F(DecontaminateDataset, AnOutputThatExistsIsRefused) {
  auto r = scan();
  ASSERT_TRUE(r.is_ok());
  const std::string out = tmp_.path() + "/busy";
  testdata::write_file(out + "/keep.txt", "mine");
  const Status s = write_decontaminated(*ds_, r.value(), out);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("not an empty directory"), std::string::npos) << s.message();
  EXPECT_EQ(testdata::read_file(out + "/keep.txt"), "mine");
}

TEST_F(DecontaminateDataset, AFailedWriteLeavesNothing) {
  auto r = scan();
  ASSERT_TRUE(r.is_ok());
  // Count the operations of a good write, then fail each of a spread of them.
  testing::FaultyFileSystem count;
  ASSERT_TRUE(write_decontaminated(*ds_, r.value(), tmp_.path() + "/counted", count).is_ok());
  const int64_t ops = count.ops;
  ASSERT_GT(ops, 20);
  for (int64_t at : {int64_t(1), int64_t(2), ops / 3, ops / 2, ops - 2, ops - 1, ops}) {
    testing::FaultyFileSystem faulty;
    faulty.fail_at_op = at;
    const std::string out = tmp_.path() + "/out" + std::to_string(at);
    const Status s = write_decontaminated(*ds_, r.value(), out, faulty);
    EXPECT_FALSE(s.is_ok()) << "op " << at << " of " << ops;
    EXPECT_NE(s.message().find("injected failure"), std::string::npos) << s.message();
    EXPECT_FALSE(fs::exists(out)) << "op " << at;
    EXPECT_FALSE(fs::exists(build_dir_of(out, ::getpid()))) << "op " << at;
  }
  testing::FaultyFileSystem short_disk;
  short_disk.byte_budget = 1000;
  const std::string out = tmp_.path() + "/full";
  EXPECT_FALSE(write_decontaminated(*ds_, r.value(), out, short_disk).is_ok());
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(build_dir_of(out, ::getpid())));
}

}  // namespace
}  // namespace mt
