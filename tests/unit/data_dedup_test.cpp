// data_dedup_test.cpp — the pieces of the streaming build: MinHash band keys
// (near-duplicates caught, unrelated texts not, the LSH curve), the flat key
// set, the streaming shard writer (byte-identical to write_shard), and the
// cutting of long documents (boundaries, marks, provenance).
#include "data/minhash.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "data/ingest.h"
#include "data/shard.h"
#include "support/data_fixtures.h"

namespace mt {
namespace {

namespace td = testdata;

std::string words(std::mt19937_64& rng, int n) {
  static const char* kWords[] = {"river", "stone", "light", "market", "engine", "violet", "copper", "harbor",
                                 "signal", "garden", "winter", "paper", "orbit", "candle", "mirror", "forest",
                                 "silver", "ladder", "planet", "thread", "window", "bridge", "anchor", "velvet"};
  std::string s;
  for (int i = 0; i < n; ++i) {
    s += kWords[rng() % 24];
    s += (i % 12 == 11) ? '\n' : ' ';
  }
  return s;
}

bool collide(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] == b[i]) return true;
  return false;
}

TEST(MinHash, NearCopiesCollideAndUnrelatedTextsDoNot) {
  const MinHashOptions opt;
  std::mt19937_64 rng(7);
  int near_caught = 0, unrelated_caught = 0;
  for (int t = 0; t < 40; ++t) {
    const std::string base = words(rng, 400);
    // A near copy: 1% of the words replaced, so most 5-gram shingles survive (J ~ 0.9).
    std::string copy = base;
    for (int e = 0; e < 4; ++e) {
      const size_t at = rng() % (copy.size() - 10);
      const size_t sp = copy.find(' ', at);
      if (sp != std::string::npos) copy.insert(sp + 1, "zebra ");
    }
    const std::string other = words(rng, 400);
    const auto kb = minhash_band_keys(base, opt), kc = minhash_band_keys(copy, opt), ko = minhash_band_keys(other, opt);
    ASSERT_EQ(kb.size(), size_t(opt.bands));
    near_caught += collide(kb, kc);
    unrelated_caught += collide(kb, ko);
  }
  EXPECT_GE(near_caught, 38);
  EXPECT_EQ(unrelated_caught, 0);
}

TEST(MinHash, KeysIgnoreCaseAndPunctuationAndDependOnTheSeed) {
  MinHashOptions opt;
  const std::string a = "The quick brown fox jumps over the lazy dog again and again";
  const std::string b = "the QUICK brown fox, jumps over the lazy dog -- again and again!";
  EXPECT_EQ(minhash_band_keys(a, opt), minhash_band_keys(b, opt));
  EXPECT_TRUE(minhash_band_keys("", opt).empty());
  EXPECT_TRUE(minhash_band_keys("  ... ,,, ", opt).empty());
  MinHashOptions other = opt;
  other.seed = 2;
  EXPECT_NE(minhash_band_keys(a, opt), minhash_band_keys(a, other));
}

TEST(MinHash, CatchProbabilityIsTheSCurve) {
  const MinHashOptions opt;  // 14 bands x 8 rows
  EXPECT_NEAR(minhash_catch_probability(0.8, opt), 0.924, 0.005);
  EXPECT_NEAR(minhash_catch_probability(0.75, opt), 0.772, 0.005);
  EXPECT_LT(minhash_catch_probability(0.5, opt), 0.06);
  EXPECT_LT(minhash_catch_probability(0.3, opt), 0.001);
  EXPECT_DOUBLE_EQ(minhash_catch_probability(1.0, opt), 1.0);
}

TEST(FlatKeySet, InsertsAndFindsLikeAStdSet) {
  FlatKeySet s;
  std::set<uint64_t> ref;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 20000; ++i) {
    const uint64_t k = (i % 7 == 0) ? uint64_t(i % 50) : rng() % 30000;  // small keys and 0 included
    EXPECT_EQ(s.insert(k), ref.insert(k).second) << k;
  }
  EXPECT_EQ(s.size(), int64_t(ref.size()));
  for (uint64_t k = 0; k < 30000; ++k) EXPECT_EQ(s.contains(k), ref.count(k) == 1) << k;
  EXPECT_LE(s.bytes(), 4 * 8 * s.size());
}

TEST(ShardWriter, WritesTheBytesWriteShardWrites) {
  td::TempDir dir;
  for (int width : {2, 4}) {
    std::mt19937_64 rng(static_cast<uint64_t>(width));
    std::vector<std::vector<int32_t>> docs(57u);
    std::vector<int32_t> flat;
    std::vector<int64_t> offsets{0};
    for (auto& d : docs) {
      d.resize(rng() % 300);  // empty documents included
      for (int32_t& t : d) t = int32_t(rng() % (width == 2 ? 65536 : 200000));
      flat.insert(flat.end(), d.begin(), d.end());
      offsets.push_back(int64_t(flat.size()));
    }
    ASSERT_TRUE(write_shard(dir / "a.tokens", dir / "a.index", flat, offsets, width, 42).is_ok());
    auto w = ShardWriter::open(dir / "b.tokens", dir / "b.index", width, 42);
    ASSERT_TRUE(w.is_ok()) << w.status().message();
    for (const auto& d : docs) ASSERT_TRUE(w.value()->add_document(d.data(), int64_t(d.size())).is_ok());
    ASSERT_TRUE(w.value()->finish(ShardSync::kSync).is_ok());
    EXPECT_EQ(td::read_file(dir / "a.tokens"), td::read_file(dir / "b.tokens")) << width;
    EXPECT_EQ(td::read_file(dir / "a.index"), td::read_file(dir / "b.index")) << width;
    EXPECT_FALSE(std::filesystem::exists(dir / "b.tokens.tmp"));
  }
  // An unfinished writer leaves no file behind, and a token too wide is refused.
  {
    auto w = ShardWriter::open(dir / "c.tokens", dir / "c.index", 2, 42);
    const int32_t big = 70000;
    EXPECT_FALSE(w.value()->add_document(&big, 1).is_ok());
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "c.tokens.tmp"));
  EXPECT_FALSE(std::filesystem::exists(dir / "c.tokens"));
}

TEST(LongDocuments, AreCutAtLineBreaksWithMarksAndOffsets) {
  Document d;
  for (int i = 0; i < 400; ++i) d.text += "line " + std::to_string(i) + " of a long document\n";
  d.marks = {{0, Special::kSuccess}, {5000, Special::kPathHeader}};
  d.source = "big.jsonl";
  d.line = 7;
  d.origin = "big.jsonl:7";
  const std::vector<Document> parts = split_long_document(d, 2048);
  ASSERT_GT(parts.size(), 4u);
  std::string joined;
  int64_t marks = 0;
  for (const Document& p : parts) {
    EXPECT_LE(p.text.size(), 2048u);
    EXPECT_EQ(p.text.back(), '\n');  // cut after a line break
    EXPECT_EQ(p.text_offset, int64_t(joined.size()));
    EXPECT_EQ(p.source, "big.jsonl");
    EXPECT_EQ(p.line, 7);
    for (const DocMark& m : p.marks) {
      EXPECT_EQ(int64_t(joined.size()) + m.offset, m.special == Special::kSuccess ? 0 : 5000);
      ++marks;
    }
    joined += p.text;
  }
  EXPECT_EQ(joined, d.text);
  EXPECT_EQ(marks, 2);
  // Without a line break or a space: cut at a UTF-8 character boundary.
  Document u;
  for (int i = 0; i < 3000; ++i) u.text += "\xc3\xa9";  // é, two bytes
  const auto up = split_long_document(u, 1025);
  for (const Document& p : up) EXPECT_EQ(p.text.size() % 2, 0u);
}

}  // namespace
}  // namespace mt
