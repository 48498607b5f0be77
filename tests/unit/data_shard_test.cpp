// data_shard_test.cpp — the shard format and the dataset directory: round
// trips (uint16 and uint32 tokens), and every corruption a reader must
// refuse with the file named: truncation, bad magic, flipped payload and
// header bytes, tokenizer mismatch, tokens outside the vocabulary, broken
// offsets, count disagreements, leftovers of an interrupted write; plus the
// tokenizer (deterministic training, specials, byte fallback) and document
// encoding with outcome and path-header tokens.
#include "data/shard.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <set>

#include <nlohmann/json.hpp>

#include "data/dataset.h"
#include "data/document.h"
#include "comm/comm.h"
#include "core/file_io.h"
#include "support/data_fixtures.h"
#include "support/faulty_file_system.h"

namespace mt {
namespace {

using ::testing::HasSubstr;
namespace td = testdata;

constexpr uint64_t kHash = 0x1234abcd5678ef00ull;

struct Files {
  std::string tok, idx;
};

Files write(const td::TempDir& dir, const std::vector<int32_t>& tokens, const std::vector<int64_t>& offsets,
            int width = 2) {
  Files f{dir / "s.tokens", dir / "s.index"};
  Status s = write_shard(f.tok, f.idx, tokens, offsets, width, kHash);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return f;
}

std::string open_error(const Files& f, uint64_t hash = kHash, int64_t vocab = 1000, int line = __builtin_LINE()) {
  auto r = ShardReader::open(f.tok, f.idx, hash, vocab);
  EXPECT_FALSE(r.is_ok()) << "called from line " << line;
  return r.is_ok() ? "" : r.status().message();
}

// Every file operation of writing a shard over an existing one, failed in
// turn, for both writers: an error naming a shard file, each file still
// whole (the old bytes or the new ones, never a torn file a reader could
// take), and no temporary left behind.
TEST(Shard, AFailedWriteLeavesEachFileWholeAndNoTemporary) {
  td::TempDir dir;
  const Files f = write(dir, {1, 2, 3}, {0, 3});
  const std::string old_tok = read_file(f.tok).value(), old_idx = read_file(f.idx).value();
  const std::vector<int32_t> tokens = {4, 5, 6, 7, 8};
  const std::vector<int64_t> offsets = {0, 2, 5};
  td::TempDir fresh;
  const Files n = write(fresh, tokens, offsets);
  const std::string new_tok = read_file(n.tok).value(), new_idx = read_file(n.idx).value();
  auto with_writer = [&](FileSystem& fs) -> Status {
    auto w = ShardWriter::open(f.tok, f.idx, 2, kHash, fs);
    if (!w) return w.status();
    for (size_t d = 0; d + 1 < offsets.size(); ++d)
      MT_RETURN_IF_ERROR(w.value()->add_document(tokens.data() + offsets[d], offsets[d + 1] - offsets[d]));
    return w.value()->finish(ShardSync::kSync);
  };
  auto with_vectors = [&](FileSystem& fs) {
    return write_shard(f.tok, f.idx, tokens, offsets, 2, kHash, ShardSync::kSync, fs);
  };
  for (const auto& [name, writer] : std::vector<std::pair<std::string, std::function<Status(FileSystem&)>>>{
           {"ShardWriter", with_writer}, {"write_shard", with_vectors}}) {
    testing::FaultyFileSystem counter;
    ASSERT_TRUE(writer(counter)) << name;
    ASSERT_EQ(read_file(f.tok).value(), new_tok) << name << " writes what write_shard writes";
    ASSERT_GE(counter.ops, 10) << name;
    for (int64_t op = 1; op <= counter.ops; ++op) {
      SCOPED_TRACE(name + ", failing op " + std::to_string(op));
      write(dir, {1, 2, 3}, {0, 3});  // the previous shard
      testing::FaultyFileSystem faulty;
      faulty.fail_at_op = op;
      const Status s = writer(faulty);
      ASSERT_FALSE(s);
      EXPECT_TRUE(s.message().find(f.tok) != std::string::npos || s.message().find(f.idx) != std::string::npos)
          << s.message();
      const std::string tok = read_file(f.tok).value(), idx = read_file(f.idx).value();
      EXPECT_TRUE(tok == old_tok || tok == new_tok);
      EXPECT_TRUE(idx == old_idx || idx == new_idx);
      std::vector<std::string> names;
      for (const auto& e : std::filesystem::directory_iterator(dir.path())) names.push_back(e.path().filename());
      std::sort(names.begin(), names.end());
      EXPECT_EQ(names, (std::vector<std::string>{"s.index", "s.tokens"}));
    }
  }
}

TEST(Shard, RoundTripBothWidths) {
  td::TempDir dir;
  const std::vector<int32_t> tokens = {5, 6, 7, 999, 0, 1, 2};
  const std::vector<int64_t> offsets = {0, 3, 3, 7};
  for (int width : {2, 4}) {
    Files f = write(dir, tokens, offsets, width);
    auto r = ShardReader::open(f.tok, f.idx, kHash, 1000);
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    EXPECT_EQ(r.value()->n_tokens(), 7);
    EXPECT_EQ(r.value()->n_docs(), 3);
    EXPECT_EQ(r.value()->token_bytes(), width);
    EXPECT_EQ(r.value()->doc_length(1), 0);
    std::vector<int32_t> back(7);
    r.value()->copy(0, 7, back.data());
    EXPECT_EQ(back, tokens);
    EXPECT_EQ(td::read_file(f.tok).size(), size_t(kShardHeaderBytes + 7 * width));
    EXPECT_FALSE(std::filesystem::exists(f.tok + ".tmp"));
  }
  // 70000 needs uint32.
  EXPECT_FALSE(write_shard(dir / "w.tokens", dir / "w.index", {70000}, {0, 1}, 2, kHash).is_ok());
}

TEST(Shard, RefusesDamagedFilesNamingThem) {
  td::TempDir dir;
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<int64_t> offsets = {0, 4, 8};
  Files f = write(dir, tokens, offsets);
  const std::string tok = td::read_file(f.tok), idx = td::read_file(f.idx);
  auto with = [&](const std::string& t, const std::string& i, int line = __builtin_LINE()) {
    td::write_file(f.tok, t);
    td::write_file(f.idx, i);
    return open_error(f, kHash, 1000, line);
  };
  EXPECT_THAT(with(tok.substr(0, tok.size() - 2), idx), HasSubstr(f.tok + ": " + std::to_string(tok.size() - 2) + " bytes, header promises"));
  EXPECT_THAT(with(tok.substr(0, 10), idx), HasSubstr(f.tok + ": truncated token file"));
  EXPECT_THAT(with(std::string(tok.size(), '\0'), idx), HasSubstr("bad magic"));
  std::string flip = tok;
  flip[kShardHeaderBytes + 3] ^= 1;
  EXPECT_THAT(with(flip, idx), HasSubstr(f.tok + ": token checksum mismatch"));
  flip = tok;
  flip[30] ^= 1;  // inside n_tokens
  EXPECT_THAT(with(flip, idx), HasSubstr("header checksum mismatch"));
  flip = idx;
  flip[kShardHeaderBytes + 9] ^= 1;
  EXPECT_THAT(with(tok, flip), HasSubstr(f.idx + ": offset checksum mismatch"));
  EXPECT_THAT(with(tok, idx + "xx"), HasSubstr("truncated or padded"));
  // The pair must match in counts.
  Files other = {dir / "o.tokens", dir / "o.index"};
  ASSERT_TRUE(write_shard(other.tok, other.idx, {1, 2, 3}, {0, 3}, 2, kHash).is_ok());
  EXPECT_THAT(with(tok, td::read_file(other.idx)), HasSubstr("disagree with"));
  // Restore and check semantic refusals.
  td::write_file(f.tok, tok);
  td::write_file(f.idx, idx);
  EXPECT_THAT(open_error(f, kHash + 1), HasSubstr(f.tok + ": tokenizer mismatch"));
  EXPECT_THAT(open_error(f, kHash, 8), HasSubstr(f.tok + ": token 8 at position 7 is outside the tokenizer's vocabulary"));
  // Decreasing offsets (with valid checksums) are refused.
  ASSERT_TRUE(write_shard(other.tok, other.idx, {1, 2, 3}, {0, 2, 1, 3}, 2, kHash).is_ok());
  EXPECT_THAT(open_error(other), HasSubstr(other.idx + ": offsets decrease at document 1"));
  // A writer interrupted before its rename leaves only *.tmp: no shard exists.
  std::filesystem::remove(f.tok);
  td::write_file(f.tok + ".tmp", tok.substr(0, 40));
  EXPECT_THAT(open_error(f), HasSubstr("cannot open shard file"));
}

TEST(Shard, FromBytesHandlesGarbage) {
  for (size_t n : {0, 1, 63, 64, 65, 200}) {
    auto r = ShardReader::from_bytes(std::string(n, 'M'), std::string(n, 'M'), "g", kHash, 100);
    EXPECT_FALSE(r.is_ok());
  }
}

class TokenizerTest : public ::testing::Test {
 protected:
  static std::vector<std::string> corpus() {
    std::vector<std::string> v;
    for (int i = 0; i < 200; ++i) v.push_back(td::document(i % 3, 40, uint64_t(i)));
    v.push_back("def main():\n    return 0\n");
    return v;
  }
  static std::string train(int64_t vocab = 350) {
    auto docs = corpus();
    std::vector<std::string_view> views(docs.begin(), docs.end());
    TokenizerTrainOptions opt;
    opt.vocab_size = vocab;
    auto m = Tokenizer::train(views, opt);
    EXPECT_TRUE(m.is_ok()) << m.status().message();
    return m.value();
  }
};

TEST_F(TokenizerTest, DeterministicWithSpecialsAndByteFallback) {
  const std::string a = train(), b = train();
  EXPECT_EQ(a, b) << "training must be deterministic";
  auto tok = Tokenizer::from_serialized(a, "t.model");
  ASSERT_TRUE(tok.is_ok()) << tok.status().message();
  const Tokenizer& t = *tok.value();
  EXPECT_LE(t.vocab_size(), 350);
  std::set<int32_t> sp;
  for (int s = 0; s < kNumSpecials; ++s) sp.insert(t.special(Special(s)));
  EXPECT_EQ(sp.size(), size_t(kNumSpecials));
  // Unseen characters still round-trip (byte fallback), and control tokens are
  // never produced from text.
  const std::string text = "kamiro \xE4\xB8\xAD\xF0\x9F\x98\x80 <|success|> <|endoftext|>\n\ttab";
  std::vector<int32_t> ids;
  t.encode(text, ids);
  for (int32_t id : ids) {
    EXPECT_FALSE(sp.count(id)) << "special produced from text";
    EXPECT_GT(id, 0) << "<unk> produced";
  }
  EXPECT_EQ(t.decode(ids.data(), int64_t(ids.size())), text);
  EXPECT_NE(t.hash(), Tokenizer::from_serialized(train(400), "u").value()->hash());
  // A SentencePiece model without our specials, or garbage, is refused.
  EXPECT_THAT(Tokenizer::from_serialized("not a model", "bad.model").status().message(), HasSubstr("bad.model: not a SentencePiece model"));
}

TEST_F(TokenizerTest, DocumentsGetTheirSpecialTokens) {
  auto tok = Tokenizer::from_serialized(train(), "t.model");
  ASSERT_TRUE(tok.is_ok());
  const Tokenizer& t = *tok.value();
  Document d;
  d.text = "a.py\nx = 1\nb.py\ny = 2\n";
  d.marks = {{0, Special::kSuccess}, {0, Special::kPathHeader}, {11, Special::kPathHeader}};
  std::vector<int32_t> ids;
  encode_document(t, d, ids);
  ASSERT_GE(ids.size(), 4u);
  EXPECT_EQ(ids[0], t.special(Special::kSuccess));
  EXPECT_EQ(ids[1], t.special(Special::kPathHeader));
  EXPECT_EQ(std::count(ids.begin(), ids.end(), t.special(Special::kPathHeader)), 2);
  std::vector<int32_t> second;
  t.encode("b.py\ny = 2\n", second);
  EXPECT_TRUE(std::equal(second.rbegin(), second.rend(), ids.rbegin()));
  EXPECT_EQ(t.decode(ids.data(), int64_t(ids.size())), d.text);
}

TEST(DatasetDir, TokenizerMismatchAndManifestDamageAreRefused) {
  td::TempDir dir;
  const std::string ds = td::build_labelled_dataset(dir.path(), td::labelled_jsonl({"web", "code"}, 2, 6), 0.2, 320);
  ASSERT_TRUE(Dataset::open(ds).is_ok());
  // A shard from another dataset (other tokenizer) copied in.
  td::TempDir other;
  const std::string ds2 =
      td::build_labelled_dataset(other.path(), td::labelled_jsonl({"web", "code"}, 2, 6, 9), 0.2, 300);
  const std::string shard = "buckets/web/q0.train.tokens";
  const std::string saved = td::read_file(ds + "/" + shard);
  td::write_file(ds + "/" + shard, td::read_file(ds2 + "/" + shard));
  auto r = Dataset::open(ds);
  ASSERT_FALSE(r.is_ok());
  EXPECT_THAT(r.status().message(), HasSubstr(shard + ": tokenizer mismatch"));
  td::write_file(ds + "/" + shard, saved);
  // A swapped tokenizer model.
  const std::string model = td::read_file(ds + "/tokenizer.model");
  td::write_file(ds + "/tokenizer.model", td::read_file(ds2 + "/tokenizer.model"));
  EXPECT_THAT(Dataset::open(ds).status().message(), HasSubstr("tokenizer.model: tokenizer mismatch"));
  td::write_file(ds + "/tokenizer.model", model);
  // Manifest damage.
  const std::string manifest = td::read_file(ds + "/manifest.json");
  td::write_file(ds + "/manifest.json", manifest.substr(0, manifest.size() / 2));
  EXPECT_THAT(Dataset::open(ds).status().message(), HasSubstr("manifest.json: malformed JSON"));
  auto j = nlohmann::json::parse(manifest);
  j["buckets"][1]["train"]["tokens"] = 5;
  td::write_file(ds + "/manifest.json", j.dump());
  EXPECT_THAT(Dataset::open(ds).status().message(), HasSubstr("the manifest records 5"));
  j = nlohmann::json::parse(manifest);
  j["buckets"][0]["train"]["tokens_file"] = "../../etc/passwd";
  td::write_file(ds + "/manifest.json", j.dump());
  EXPECT_THAT(Dataset::open(ds).status().message(), HasSubstr("shard files must be"));
  td::write_file(ds + "/manifest.json", manifest);
  EXPECT_TRUE(Dataset::open(ds).is_ok());
  EXPECT_THAT(Dataset::open(dir / "missing").status().message(), HasSubstr("not a dataset directory"));
}

TEST(DatasetDir, BuildIsDeterministicAcrossThreadCounts) {
  // Clustered topics and perplexity quality (no metadata), so every labeler runs.
  std::string jsonl;
  for (int i = 0; i < 120; ++i) jsonl += nlohmann::json{{"text", td::document(i % 3, 30 + i % 40, uint64_t(i))}}.dump() + "\n";
  auto build = [&](const td::TempDir& dir, int threads) {
    td::write_file(dir / "c.jsonl", jsonl);
    auto cfg = parse_data_build_config("[[input]]\npath = \"c.jsonl\"\n[tokenizer]\nvocab_size = 320\n[topics]\nn_topics = "
                                       "3\n[quality]\nn_quality = 2\n[split]\neval_frac = 0.1\n",
                                       dir / "data.toml");
    EXPECT_TRUE(cfg.is_ok()) << cfg.status().message();
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    BuildReport rep;
    Status s = build_dataset(cfg.value(), dir / "ds", rep);
    omp_set_num_threads(saved);
    EXPECT_TRUE(s.is_ok()) << s.message();
    return rep;
  };
  td::TempDir a, b;
  build(a, 1);
  const BuildReport rb = build(b, 2);
  EXPECT_GE(rb.buckets, 3);  // 3 topics x up to 2 levels
  auto ja = nlohmann::json::parse(td::read_file(a / "ds/manifest.json"));
  auto jb = nlohmann::json::parse(td::read_file(b / "ds/manifest.json"));
  ja.erase("build_config");
  jb.erase("build_config");
  ja["ingest"].erase("first_error");
  jb["ingest"].erase("first_error");
  EXPECT_EQ(ja, jb);
  for (const auto& bk : ja["buckets"])
    for (const char* split : {"train", "eval"})
      for (const char* f : {"tokens_file", "index_file"}) {
        const std::string rel = bk[split][f].get<std::string>();
        EXPECT_EQ(td::read_file(a / ("ds/" + rel)), td::read_file(b / ("ds/" + rel))) << rel;
      }
  // Rebuilding over an existing dataset is refused.
  auto cfg = parse_data_build_config("[[input]]\npath = \"c.jsonl\"\n", a / "data.toml");
  BuildReport rep;
  EXPECT_THAT(build_dataset(cfg.value(), a / "ds", rep).message(), HasSubstr("output exists"));
}

// Every file of a dataset goes through the injectable FileSystem: whichever
// write, rename or directory creation fails, the build reports it, naming
// what failed, and leaves neither the output nor its temporary directory.
TEST(DatasetDir, AFailedWriteLeavesNoDatasetAndNoTemporary) {
  td::TempDir dir;
  std::string jsonl;
  for (int i = 0; i < 40; ++i) jsonl += nlohmann::json{{"text", td::document(i % 2, 30, uint64_t(i))}}.dump() + "\n";
  td::write_file(dir / "c.jsonl", jsonl);
  auto cfg = parse_data_build_config(
      "[[input]]\npath = \"c.jsonl\"\n[tokenizer]\nvocab_size = 300\n[split]\n"
      "eval_frac = 0.2\n",
      dir / "data.toml");
  ASSERT_TRUE(cfg.is_ok()) << cfg.status().message();
  // A clean run counts the operations; then each one is failed in turn.
  testing::FaultyFileSystem counting;
  LocalComm one;
  BuildReport rep;
  ASSERT_TRUE(build_dataset(cfg.value(), dir / "clean", rep, false, one, counting).is_ok());
  const int64_t total = counting.ops;
  ASSERT_GT(total, 10);
  // The first and last operations (set-up; manifest, tokenizer and the
  // publishing rename) and a spread over the shards in between.
  std::set<int64_t> ops;
  for (int64_t k = 1; k <= 12; ++k) ops.insert({k, total + 1 - k, k * total / 13});
  for (int64_t op : ops) {
    testing::FaultyFileSystem faulty;
    faulty.fail_at_op = op;
    const std::string out = dir / ("ds" + std::to_string(op));
    const Status s = build_dataset(cfg.value(), out, rep, false, one, faulty);
    ASSERT_FALSE(s.is_ok()) << "op " << op;
    EXPECT_THAT(s.message(), HasSubstr("injected failure at op")) << s.message();
    EXPECT_FALSE(std::filesystem::exists(out)) << "op " << op;
    for (const auto& e : std::filesystem::directory_iterator(dir.path()))
      EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path() << " after op " << op;
  }
}

// The old TF-IDF k-means labels a whole corpus at once; a streamed build
// refuses it by name instead of labelling with a different method.
TEST(DatasetDir, TfidfTopicsAreRefusedByName) {
  td::TempDir dir;
  std::string jsonl;
  for (int i = 0; i < 20; ++i) jsonl += nlohmann::json{{"text", td::document(i % 2, 30, uint64_t(i))}}.dump() + "\n";
  td::write_file(dir / "c.jsonl", jsonl);
  auto cfg = parse_data_build_config("[[input]]\npath = \"c.jsonl\"\n[tokenizer]\nvocab_size = 300\n[topics]\n"
                                     "n_topics = 2\nmethod = \"tfidf\"\n",
                                     dir / "data.toml");
  ASSERT_TRUE(cfg.is_ok()) << cfg.status().message();
  BuildReport rep;
  const Status s = build_dataset(cfg.value(), dir / "ds", rep);
  EXPECT_THAT(s.message(), HasSubstr("topics.method = \"tfidf\""));
  EXPECT_FALSE(std::filesystem::exists(dir / "ds"));
}

}  // namespace
}  // namespace mt
