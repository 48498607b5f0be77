// data_tokenizer_test.cpp — Tokenizer::encode (the word-cache encoder) gives
// exactly SentencePiece's ids: on megabytes of real text (Python docs, C++
// headers, man pages, where installed), on edge cases (whitespace runs,
// digits, invalid UTF-8, literal "▁" and "<|endoftext|>", long lines without
// spaces) and on fuzz strings; and the parts it is built from: the model
// reader, the chunk cutter, the cache.
#include <gtest/gtest.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "data/chunk_cutter.h"
#include "data/sp_model_info.h"
#include "data/tokenizer.h"
#include "data/word_cache.h"
#include "data/word_cache_encoder.h"
#include "support/data_fixtures.h"

namespace mt {
namespace {

namespace fs = std::filesystem;
namespace td = mt::testdata;
using namespace std::string_literals;

std::string read_plain(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string read_gz(const fs::path& p) {
  std::string out;
  gzFile f = gzopen(p.c_str(), "rb");
  if (!f) return out;
  char buf[1 << 15];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, size_t(n));
  gzclose(f);
  return out;
}

// Up to `budget` bytes of the files under `dir` whose names end in `ext`, one
// document per file (cut at 64 KiB), in sorted order so runs are repeatable.
void add_files(const std::string& dir, const std::string& ext, int64_t budget, std::vector<std::string>& docs) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  std::vector<fs::path> paths;
  for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file(ec) && it->path().string().ends_with(ext)) paths.push_back(it->path());
  std::sort(paths.begin(), paths.end());
  for (const fs::path& p : paths) {
    if (budget <= 0) break;
    std::string t = ext == ".gz" ? read_gz(p) : read_plain(p);
    t.resize(std::min<size_t>(t.size(), 64 << 10));
    budget -= int64_t(t.size());
    if (!t.empty()) docs.push_back(std::move(t));
  }
}

std::string repeat(std::string_view s, int64_t bytes) {
  std::string r;
  while (int64_t(r.size()) < bytes) r += s;
  return r;
}

// Text that stresses the chunk rules: every whitespace shape, digits, scripts,
// invalid bytes, the space symbol and control-token text written literally.
std::vector<std::string> edge_cases() {
  std::vector<std::string> v = {
      "",
      " ",
      "   ",
      "\n",
      "\n\n\n",
      " \n ",
      "a",
      "  leading spaces",
      "trailing spaces   ",
      "tab\tseparated\t\tvalues\t",
      "\t\t\tindented with tabs\n\t\tand more",
      "mixed \t \t whitespace  \t\n  \n\t\n",
      "carriage\r\nreturns\r\n\r\n",
      "form\ffeed and \vvertical tab",
      "nul\0byte"s,
      "digits 0123456789 3.14159265358979 1e-10 0x7FFFFFFF 2024-01-31T12:00:00Z",
      "<|endoftext|>",
      "text <|endoftext|> more<|success|><|failure|> <|file|>src/main.cc",
      "\xE2\x96\x81",
      "\xE2\x96\x81\xE2\x96\x81word \xE2\x96\x81 x\xE2\x96\x81y  \xE2\x96\x81  z",
      "caf\xC3\xA9 na\xC3\xAFve \xC3\xBC\xC3\xB6\xC3\xA4 \xE2\x80\x94 \xE2\x80\x9Cquoted\xE2\x80\x9D",
      "\xE4\xB8\xAD\xE6\x96\x87\xE6\xB5\x8B\xE8\xAF\x95\xE6\x96\x87\xE6\x9C\xAC\xE3\x80\x82\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E",
      "emoji \xF0\x9F\x98\x80\xF0\x9F\x8E\x89 family \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7",
      "combining e\xCC\x81 and \xD8\xA7\xD9\x84\xD8\xB9\xD8\xB1\xD8\xA8\xD9\x8A\xD8\xA9 rtl",
      "invalid \xFF\xFE bytes \x80 lone \xC3 truncated \xE2\x96 end \xF0\x9F\x98",
      "overlong \xC0\xAF surrogate \xED\xA0\x80 too big \xF4\x90\x80\x80 \xF8\x88\x80\x80\x80",
      "\xEF\xBF\xBD literal replacement \xEF\xBF\xBD\xEF\xBF\xBD",
      "url https://example.com/a/b?c=d&e=f#g and path /usr/include/c++/12/bits/stl_vector.h",
      "std::vector<std::unique_ptr<Foo>> v; for (auto& x : v) { x->bar(); }  // comment",
      repeat("9", 5000),
      repeat("a", 3000),
      repeat("ab", 3000),
      repeat(" ", 3000),
      repeat("\t", 1000),
      repeat("-=", 2000),
      repeat("\xE4\xB8\xAD", 3000),
      repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0MTIzNDU2Nzg5K/", 200000),  // a base64 blob, one line
      repeat("word ", 20000),
  };
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += char(i);
  v.push_back(bytes + bytes);
  return v;
}

// Fuzz strings: fragments chosen to collide at chunk boundaries, plus raw bytes.
std::string fuzz_string(uint64_t seed) {
  static const char* kFragments[] = {" ",  "  ", "\t", "\n", "\r", "a",  "the", "The", "ing", "0",  "12",  "999",
                                     ".",  ",",  "(", ")",  "{", "}", "_", "-",   "--",  "::", "<|", "|>",
                                     "<|endoftext|>", "\xE2\x96\x81", "\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80",
                                     "\xFF", "\x80", "\xE2\x96", "def", "return", "    ", "\xEF\xBF\xBD"};
  constexpr int kN = sizeof(kFragments) / sizeof(kFragments[0]);
  uint64_t s = seed;
  std::string out;
  const int len = int(td::splitmix(s) % 60);
  for (int i = 0; i < len; ++i) {
    const uint64_t r = td::splitmix(s);
    if (r % 8 == 0)
      out += char(r >> 32);
    else
      out += kFragments[(r >> 8) % kN];
  }
  return out;
}

class WordCacheTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    docs_ = new std::vector<std::string>();
    add_files("/usr/share/doc/python3.11/html/_sources", ".txt", 1200 << 10, *docs_);
    add_files("/usr/include/fmt", ".h", 600 << 10, *docs_);
    add_files("/usr/share/man/man1", ".gz", 700 << 10, *docs_);
    real_bytes_ = 0;
    for (const auto& d : *docs_) real_bytes_ += int64_t(d.size());
    // Synthetic documents as well, so the test means something without them.
    for (int i = 0; i < 300; ++i) docs_->push_back(td::document(i % 3, 300, uint64_t(i)));
    std::vector<std::string_view> views(docs_->begin(), docs_->end());
    TokenizerTrainOptions opt;
    opt.vocab_size = 4000;
    opt.sample_bytes = 1 << 20;
    auto m = Tokenizer::train(views, opt);
    ASSERT_TRUE(m.is_ok()) << m.status().message();
    model_ = new std::string(m.value());
    auto t = Tokenizer::from_serialized(*model_, "test.model");
    ASSERT_TRUE(t.is_ok()) << t.status().message();
    tok_ = t.value().release();
  }
  // SentencePiece's own ids for every document, once: the slow side of the
  // comparisons. (ctest runs each TEST in its own process, which repeats the
  // suite set-up, hence two large tests rather than many small ones.)
  static void compute_want() {
    want_ = new std::vector<std::vector<int32_t>>(docs_->size());
    for (size_t i = 0; i < docs_->size(); ++i) tok_->encode_plain((*docs_)[i], (*want_)[i]);
  }
  static void TearDownTestSuite() {
    delete tok_;
    delete model_;
    delete docs_;
    delete want_;
  }

  static void expect_same(const Tokenizer& t, std::string_view text, const std::string& what) {
    std::vector<int32_t> want, got;
    t.encode_plain(text, want);
    t.encode(text, got);
    ASSERT_EQ(got, want) << what << " (" << text.size() << " bytes): " << std::string(text.substr(0, 200));
  }

  static void ProjectModelUsesTheWordCache();
  static void EqualsSentencePieceOnRealText();
  static void EqualsSentencePieceOnEdgeCases();
  static void EqualsSentencePieceOnFuzzStrings();
  static void TinyCacheThatKeepsClearingIsStillExact();
  static void ThreadsEncodeConcurrently();
  static void ModelReaderAgreesWithSentencePiece();
  static void CutterChunks();

  static std::vector<std::string>* docs_;
  static std::vector<std::vector<int32_t>>* want_;  // encode_plain of each document
  static std::string* model_;
  static Tokenizer* tok_;
  static int64_t real_bytes_;
};
std::vector<std::string>* WordCacheTest::docs_ = nullptr;
std::vector<std::vector<int32_t>>* WordCacheTest::want_ = nullptr;
std::string* WordCacheTest::model_ = nullptr;
Tokenizer* WordCacheTest::tok_ = nullptr;
int64_t WordCacheTest::real_bytes_ = 0;

void WordCacheTest::ProjectModelUsesTheWordCache() {
  EXPECT_EQ(tok_->word_cache_off_reason(), "") << "the pipeline's tokenizer settings must qualify";
  sentencepiece::SentencePieceProcessor sp;
  ASSERT_TRUE(sp.LoadFromSerializedProto(*model_).ok());
  auto e = WordCacheEncoder::create(sp, *model_);
  ASSERT_TRUE(e.is_ok()) << e.status().message();
  EXPECT_TRUE(e.value()->cutter().cuts_at_spaces());
  EXPECT_TRUE(e.value()->cutter().cuts_at_newlines());
  EXPECT_EQ(e.value()->bpe_off_reason(), "");
}

void WordCacheTest::EqualsSentencePieceOnRealText() {
  int64_t bytes = 0;
  for (size_t i = 0; i < docs_->size(); ++i) {
    std::vector<int32_t> got;
    tok_->encode((*docs_)[i], got);
    ASSERT_EQ(got, (*want_)[i]) << "document " << i << ": " << (*docs_)[i].substr(0, 200);
    bytes += int64_t((*docs_)[i].size());
  }
  std::printf("compared %.2f MB (%.2f MB from installed docs, headers, man pages)\n", double(bytes) / 1e6,
              double(real_bytes_) / 1e6);
  EXPECT_GT(bytes, 1000000);
}

void WordCacheTest::EqualsSentencePieceOnEdgeCases() {
  const auto cases = edge_cases();
  for (size_t i = 0; i < cases.size(); ++i) expect_same(*tok_, cases[i], "edge case " + std::to_string(i));
  // And glued together, so each case also meets the others at its boundaries.
  std::string all;
  for (const auto& c : cases) all += c.substr(0, 2000);
  expect_same(*tok_, all, "edge cases concatenated");
}

void WordCacheTest::EqualsSentencePieceOnFuzzStrings() {
  for (uint64_t seed = 0; seed < 10000; ++seed) expect_same(*tok_, fuzz_string(seed), "fuzz seed " + std::to_string(seed));
}

void WordCacheTest::TinyCacheThatKeepsClearingIsStillExact() {
  sentencepiece::SentencePieceProcessor sp;
  ASSERT_TRUE(sp.LoadFromSerializedProto(*model_).ok());
  auto e = WordCacheEncoder::create(sp, *model_);
  ASSERT_TRUE(e.is_ok()) << e.status().message();
  WordCache cache(8);
  const int64_t memory = cache.memory_bytes();
  for (size_t i = 0; i < std::min<size_t>(docs_->size(), 40); ++i) {
    std::vector<int32_t> got;
    e.value()->encode((*docs_)[i], got, cache);
    ASSERT_EQ(got, (*want_)[i]) << "document " << i;
  }
  EXPECT_GT(cache.clears(), 10);
  EXPECT_LE(cache.size(), 8);
  EXPECT_EQ(cache.memory_bytes(), memory) << "the cache must not grow";
}

TEST(WordCacheBound, ArenasNeverGrowAndHitsReturnWhatWasStored) {
  WordCache cache(1000);
  const int64_t memory = cache.memory_bytes();
  EXPECT_LE(memory, 1000 * 100);
  std::vector<int32_t> ids(WordCache::kMaxIds);
  for (int i = 0; i < 5000; ++i) {
    // Maximal words and id lists overflow the arenas long before 1000 entries.
    std::string w = std::to_string(i) + std::string(size_t(WordCache::kMaxWordBytes - 8), 'x');
    for (size_t k = 0; k < ids.size(); ++k) ids[k] = int32_t(i * 7 + int(k));
    const uint64_t h = WordCache::hash(w);
    cache.insert(w, h, ids.data(), int64_t(ids.size()));
    int64_t n = 0;
    const int32_t* got = cache.find(w, h, n);
    ASSERT_NE(got, nullptr);
    ASSERT_EQ(n, int64_t(ids.size()));
    ASSERT_TRUE(std::equal(ids.begin(), ids.end(), got));
  }
  EXPECT_EQ(cache.memory_bytes(), memory);
  EXPECT_GT(cache.clears(), 50);
  int64_t n = 0;
  EXPECT_EQ(cache.find("absent", WordCache::hash("absent"), n), nullptr);
}

void WordCacheTest::ThreadsEncodeConcurrently() {
  std::vector<std::vector<int32_t>> got(docs_->size());
  auto work = [&](size_t first) {
    for (size_t i = first; i < docs_->size(); i += 2) tok_->encode((*docs_)[i], got[i]);
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  for (size_t i = 0; i < docs_->size(); ++i) ASSERT_EQ(got[i], (*want_)[i]) << "document " << i;
}

void WordCacheTest::ModelReaderAgreesWithSentencePiece() {
  sentencepiece::SentencePieceProcessor sp;
  ASSERT_TRUE(sp.LoadFromSerializedProto(*model_).ok());
  auto info = read_sp_model_info(*model_, "test.model");
  ASSERT_TRUE(info.is_ok()) << info.status().message();
  const SpModelInfo& m = info.value();
  ASSERT_EQ(int64_t(m.pieces.size()), int64_t(sp.GetPieceSize()));
  for (int id = 0; id < sp.GetPieceSize(); ++id) {
    const SpPieceInfo& p = m.pieces[size_t(id)];
    EXPECT_EQ(p.piece, sp.IdToPiece(id)) << id;
    EXPECT_EQ(p.score, sp.GetScore(id)) << id;
    EXPECT_EQ(p.type == SpPieceType::kControl, sp.IsControl(id)) << id;
    EXPECT_EQ(p.type == SpPieceType::kUnknown, sp.IsUnknown(id)) << id;
    EXPECT_EQ(p.type == SpPieceType::kByte, sp.IsByte(id)) << id;
  }
  EXPECT_EQ(m.model_type, SpModelType::kBpe);
  EXPECT_EQ(m.normalizer_name, "identity");
  EXPECT_EQ(m.charsmap_bytes, 0);
  EXPECT_FALSE(m.add_dummy_prefix);
  EXPECT_FALSE(m.remove_extra_whitespaces);
  EXPECT_TRUE(m.byte_fallback);
  EXPECT_FALSE(read_sp_model_info(std::string("\x0a\xff\xff", 3), "bad").is_ok());
}

void WordCacheTest::CutterChunks() {
  auto info = read_sp_model_info(*model_, "test.model");
  auto cutter = ChunkCutter::from_model(info.value());
  ASSERT_TRUE(cutter.is_ok()) << cutter.status().message();
  std::vector<std::string_view> chunks;
  cutter->split("a b  c\nd\n\n \xE2\x96\x81 e", chunks);
  const std::vector<std::string_view> want = {"a", " b", "  c", "\n", "d", "\n", "\n", " \xE2\x96\x81 e"};
  EXPECT_EQ(chunks, want);
  // A long line without spaces is cut where no piece spans (digits here).
  chunks.clear();
  const std::string line = repeat("abc1", 4000);
  cutter->split(line, chunks);
  EXPECT_GE(chunks.size(), size_t(2000));
  std::string joined;
  for (auto c : chunks) joined += c;
  EXPECT_EQ(joined, line);
}

TEST(WordCacheDecode, FollowsSentencePieceUtf8Rules) {
  struct Case {
    std::string s;
    uint32_t cp;
    int64_t len;
  } cases[] = {{"A", 'A', 1},
               {"\xC3\xA9", 0xE9, 2},
               {"\xE2\x96\x81", 0x2581, 3},
               {"\xF0\x9F\x98\x80", 0x1F600, 4},
               {"\xC0\xAF", 0xFFFD, 1},          // overlong
               {"\xED\xA0\x80", 0xFFFD, 1},      // surrogate
               {"\xF4\x90\x80\x80", 0xFFFD, 1},  // above U+10FFFF
               {"\xE2\x96", 0xFFFD, 1},          // truncated
               {"\x80", 0xFFFD, 1},              // lone continuation byte
               {"\xEF\xBF\xBD", 0xFFFD, 3}};     // U+FFFD itself is valid
  for (const Case& c : cases) {
    int64_t len = 0;
    EXPECT_EQ(sp_decode_char(c.s, len), c.cp) << c.s;
    EXPECT_EQ(len, c.len) << c.s;
  }
}

TEST(WordCacheRefusal, ModelsOutsideTheArgumentFallBackToSentencePiece) {
  // SentencePiece's defaults: NFKC normalisation and a dummy prefix.
  std::vector<std::string> lines;
  for (int i = 0; i < 200; ++i) lines.push_back(td::document(i % 3, 30, uint64_t(i)));
  std::ostringstream joined;
  for (const auto& l : lines) joined << l << "\n";
  const std::string path = (fs::temp_directory_path() / "mt_word_cache_refusal.txt").string();
  td::write_file(path, joined.str());
  std::string model;
  auto s = sentencepiece::SentencePieceTrainer::Train(
      "--input=" + path + " --model_type=bpe --vocab_size=300 --minloglevel=2 --num_threads=1", nullptr, &model);
  fs::remove(path);
  ASSERT_TRUE(s.ok()) << s.ToString();
  sentencepiece::SentencePieceProcessor sp;
  ASSERT_TRUE(sp.LoadFromSerializedProto(model).ok());
  auto e = WordCacheEncoder::create(sp, model);
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.status().message().find("normaliser"), std::string::npos) << e.status().message();
}

TEST_F(WordCacheTest, ProjectModelQualifies) {
  ProjectModelUsesTheWordCache();
  ModelReaderAgreesWithSentencePiece();
  CutterChunks();
}

TEST_F(WordCacheTest, EncodeEqualsSentencePiece) {
  compute_want();
  {
    SCOPED_TRACE("real text");
    EqualsSentencePieceOnRealText();
  }
  {
    SCOPED_TRACE("edge cases");
    EqualsSentencePieceOnEdgeCases();
  }
  {
    SCOPED_TRACE("fuzz strings");
    EqualsSentencePieceOnFuzzStrings();
  }
  {
    SCOPED_TRACE("tiny cache");
    TinyCacheThatKeepsClearingIsStillExact();
  }
  {
    SCOPED_TRACE("two threads");
    ThreadsEncodeConcurrently();
  }
}

}  // namespace
}  // namespace mt
