// data_ingest_test.cpp — normalisation (UTF-8, line endings), the JSONL
// reader (plain, gzip, zstd; truncated and corrupt streams), configurable
// fields, every bad-record case with file:line (fail) or a count (skip),
// de-duplication, repository stitching order and filters, code JSONL
// grouping and splitting, and rollout outcome tags.
#include "data/ingest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "data/line_reader.h"
#include "support/data_fixtures.h"

namespace mt {
namespace {

using ::testing::HasSubstr;
namespace td = testdata;

TEST(Normalize, Utf8ValidationAndRepair) {
  EXPECT_EQ(find_invalid_utf8("plain ascii"), -1);
  EXPECT_EQ(find_invalid_utf8("caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80"), -1);
  EXPECT_EQ(find_invalid_utf8("ab\xFFgh"), 2);
  EXPECT_EQ(find_invalid_utf8("\xC0\xAF"), 0);          // overlong
  EXPECT_EQ(find_invalid_utf8("x\xED\xA0\x80"), 1);      // surrogate
  EXPECT_EQ(find_invalid_utf8("\xF4\x90\x80\x80"), 0);   // > U+10FFFF
  EXPECT_EQ(find_invalid_utf8("abcdefgh\xE4\xB8"), 8);   // truncated at the end
  std::string s = "a\xFF\xFE" "b\xC3";
  EXPECT_EQ(repair_utf8(s), 3);
  EXPECT_EQ(s, "a\xEF\xBF\xBD\xEF\xBF\xBD" "b\xEF\xBF\xBD");
  EXPECT_EQ(find_invalid_utf8(s), -1);
}

TEST(Normalize, LineEndingsBomAndNul) {
  std::string s = "\xEF\xBB\xBFone\r\ntwo\rthree\n";
  s += std::string("\0four\0", 6);
  normalize_text(s);
  EXPECT_EQ(s, "one\ntwo\nthree\nfour");
  EXPECT_TRUE(is_blank(" \n\t "));
  EXPECT_FALSE(is_blank(" x "));
}

TEST(LineReader, PlainGzipZstdGiveTheSameLines) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "line " + std::to_string(i) + (i % 7 ? "\n" : " with more words\n");
  text += "last line without newline";
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZstd}) {
    const std::string bytes = c == Compression::kGzip ? td::gzip(text) : c == Compression::kZstd ? td::zstd(text) : text;
    auto r = LineReader::from_memory(bytes, c, "mem");
    std::string line, all;
    int64_t n = 0;
    for (;;) {
      auto more = r->next(line);
      ASSERT_TRUE(more.is_ok()) << more.status().message();
      if (!more.value()) break;
      all += line + "\n";
      ++n;
    }
    EXPECT_EQ(n, 20001);
    EXPECT_EQ(all, text + "\n");
    EXPECT_EQ(r->line_number(), 20001);
  }
  // Concatenated gzip members read as one stream.
  auto r = LineReader::from_memory(td::gzip("a\n") + td::gzip("b\n"), Compression::kGzip, "cat.gz");
  std::string all;
  ASSERT_TRUE(r->read_all(all).is_ok());
  EXPECT_EQ(all, "a\nb\n");
}

TEST(LineReader, TruncatedAndCorruptStreamsAreErrors) {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "some line of text number " + std::to_string(i) + "\n";
  for (Compression c : {Compression::kGzip, Compression::kZstd}) {
    const std::string full = c == Compression::kGzip ? td::gzip(text) : td::zstd(text);
    const std::string name = c == Compression::kGzip ? "x.jsonl.gz" : "x.jsonl.zst";
    auto read = [&](const std::string& bytes) {
      auto r = LineReader::from_memory(bytes, c, name);
      std::string all;
      return r->read_all(all);
    };
    EXPECT_TRUE(read(full).is_ok());
    Status cut = read(full.substr(0, full.size() * 2 / 3));
    ASSERT_FALSE(cut.is_ok()) << name;
    EXPECT_THAT(cut.message(), HasSubstr(name));
    EXPECT_THAT(cut.message(), HasSubstr("truncated"));
    std::string bad = full;
    for (size_t i = 20; i < 60 && i < bad.size(); ++i) bad[i] = char(bad[i] ^ 0x5A);
    Status corrupt = read(bad);
    ASSERT_FALSE(corrupt.is_ok()) << name;
    EXPECT_THAT(corrupt.message(), HasSubstr(name));
  }
}

TEST(Jsonl, FieldsAndErrors) {
  JsonlFields f;
  JsonlRecord r;
  ASSERT_TRUE(parse_jsonl_record(R"({"text":"hi","topic":"web","quality":3,"outcome":"success"})", f, true, r, "f:1"));
  EXPECT_EQ(r.text, "hi");
  EXPECT_EQ(r.topic, "web");
  EXPECT_EQ(r.quality, "q3");
  EXPECT_EQ(r.outcome, 1);
  JsonlFields code;
  code.text = "content";
  code.quality = "meta.score";
  JsonlRecord c;
  ASSERT_TRUE(parse_jsonl_record(R"({"content":"x","repo":"a/b","path":"s.py","meta":{"score":0.7}})", code, true, c,
                                 "f:2"));
  EXPECT_EQ(c.repo, "a/b");
  EXPECT_DOUBLE_EQ(c.quality_score, 0.7);

  struct Case {
    const char* line;
    const char* reason;
    const char* msg;
  } cases[] = {
      {R"({"text": "unterminated)", "malformed_json", "f:7: malformed JSON"},
      {R"([1, 2])", "malformed_json", "f:7: expected a JSON object, got array"},
      {R"({"body": "no text field"})", "missing_text", "f:7: missing \"text\" field"},
      {R"({"text": 42})", "bad_field", "f:7: field \"text\" must be a string, got integer"},
      {R"({"text": "x", "outcome": "maybe"})", "bad_outcome", "must be \"success\" or \"failure\""},
      {R"({"text": "x", "quality": [1]})", "bad_field", "field \"quality\" must be a label"},
      {"{\"text\": \"a\xFF\"}", "invalid_utf8", "f:7: invalid UTF-8"},
      {R"({"text": "lone \ud800 surrogate"})", "invalid_utf8", "f:7: invalid UTF-8"},
  };
  for (const Case& k : cases) {
    JsonlRecord x;
    std::string reason;
    Status s = parse_jsonl_record(k.line, f, true, x, "f:7", &reason);
    ASSERT_FALSE(s.is_ok()) << k.line;
    EXPECT_THAT(s.message(), HasSubstr(k.msg)) << k.line;
    EXPECT_EQ(reason, k.reason) << k.line;
  }
}

class IngestTest : public ::testing::Test {
 protected:
  td::TempDir dir;
  std::vector<Document> docs;
  IngestStats st;
  Status run(const std::vector<InputSpec>& in, CodeOptions code = {}) { return ingest(in, code, docs, st); }
  InputSpec spec(const std::string& rel, InputKind k = InputKind::kAuto) {
    InputSpec s;
    s.path = dir / rel;
    s.kind = k;
    return s;
  }
};

TEST_F(IngestTest, JsonlCompressedTextAndDirectoriesWithDedup) {
  const std::string rows = "{\"text\":\"alpha doc\\r\\nline\"}\n\n{\"text\":\"beta doc\"}\n{\"text\":\"alpha doc\\nline\"}\n"
                           "{\"text\":\"   \\n\"}\n";
  td::write_file(dir / "in/a.jsonl", rows);
  td::write_file(dir / "in/b.jsonl.gz", td::gzip("{\"text\":\"gamma\"}\n"));
  td::write_file(dir / "in/c.jsonl.zst", td::zstd("{\"text\":\"delta\"}\n{\"text\":\"beta doc\"}\n"));
  td::write_file(dir / "in/sub/d.txt", "a plain text file\r\n");
  td::write_file(dir / "in/.hidden.txt", "never read");
  ASSERT_TRUE(run({spec("in")}).is_ok());
  ASSERT_EQ(docs.size(), 5u);
  EXPECT_EQ(docs[0].text, "alpha doc\nline");  // CRLF normalised, so row 3 is its duplicate
  EXPECT_EQ(docs[0].origin, dir / "in/a.jsonl:1");
  EXPECT_EQ(docs[1].text, "beta doc");
  EXPECT_EQ(docs[2].text, "gamma");
  EXPECT_EQ(docs[3].text, "delta");
  EXPECT_EQ(docs[4].text, "a plain text file\n");
  EXPECT_EQ(st.dropped["duplicate"], 2);
  EXPECT_EQ(st.dropped["empty"], 1);
  EXPECT_EQ(st.files, 4);
}

TEST_F(IngestTest, BadRecordsFailWithFileAndLineOrAreCountedWhenSkipping) {
  td::write_file(dir / "bad.jsonl", "{\"text\":\"ok\"}\n{\"text\": oops}\n{\"body\":\"x\"}\n{\"text\":\"b\xFF\"}\n{\"text\":\"fine\"}\n");
  Status s = run({spec("bad.jsonl")});
  ASSERT_FALSE(s.is_ok());
  EXPECT_THAT(s.message(), HasSubstr(dir / "bad.jsonl:2: malformed JSON"));
  docs.clear();
  st = IngestStats();
  InputSpec skip = spec("bad.jsonl");
  skip.on_error = OnError::kSkip;
  ASSERT_TRUE(run({skip}).is_ok());
  EXPECT_EQ(docs.size(), 2u);
  EXPECT_EQ(st.dropped["malformed_json"], 1);
  EXPECT_EQ(st.dropped["missing_text"], 1);
  EXPECT_EQ(st.dropped["invalid_utf8"], 1);
  EXPECT_THAT(st.first_error["missing_text"], HasSubstr("bad.jsonl:3"));
  // utf8 = "repair" keeps the record with a replacement character.
  docs.clear();
  st = IngestStats();
  skip.utf8 = Utf8Policy::kRepair;
  ASSERT_TRUE(run({skip}).is_ok());
  EXPECT_EQ(docs.size(), 3u);
  EXPECT_EQ(docs[1].text, "b\xEF\xBF\xBD");
  EXPECT_EQ(st.utf8_repaired, 1);
  // A missing input and a truncated compressed file are errors naming the file.
  EXPECT_THAT(run({spec("nope.jsonl")}).message(), HasSubstr("nope.jsonl: input does not exist"));
  const std::string z = td::zstd(std::string(100000, 'x'));
  td::write_file(dir / "cut.jsonl.zst", z.substr(0, z.size() / 2));
  Status cut = run({spec("cut.jsonl.zst")});
  ASSERT_FALSE(cut.is_ok());
  EXPECT_THAT(cut.message(), HasSubstr("cut.jsonl.zst: truncated zstd stream"));
  td::write_file(dir / "bad.txt", "text \xC0\xAF here");
  EXPECT_THAT(run({spec("bad.txt")}).message(), HasSubstr("bad.txt: invalid UTF-8 at byte 5"));
}

TEST_F(IngestTest, RepositoryStitchingOrderAndFilters) {
  const std::string r = "repos/proj";
  td::write_file(dir / (r + "/src/main.py"), "print('main')\n");
  td::write_file(dir / (r + "/README.md"), "# proj\r\n");
  td::write_file(dir / (r + "/src/a/util.py"), "def f():\n    return 1");
  td::write_file(dir / (r + "/Zed.txt"), "capital first in byte order\n");
  td::write_file(dir / (r + "/logo.png"), std::string("\x89PNG\r\n\x1a\n\0\0\0", 11));
  td::write_file(dir / (r + "/dist/app.min.js"), "var a=1;");
  td::write_file(dir / (r + "/gen.py"), "# Code generated by protoc. DO NOT EDIT.\nx = 1\n");
  td::write_file(dir / (r + "/big.txt"), std::string(5000, 'b'));
  td::write_file(dir / (r + "/.git/HEAD"), "ref: refs/heads/main\n");
  td::write_file(dir / (r + "/node_modules/x/index.js"), "module.exports = 1;\n");
  td::write_file(dir / "repos/other/x.c", "int main() { return 0; }\n");
  CodeOptions code;
  code.max_file_bytes = 4096;
  InputSpec in = spec("repos", InputKind::kRepos);
  in.topic = "code";
  ASSERT_TRUE(run({in}, code).is_ok());
  ASSERT_EQ(docs.size(), 2u);  // "other" and "proj", in name order
  EXPECT_EQ(docs[0].origin, "other");
  const Document& d = docs[1];
  EXPECT_EQ(d.origin, "proj");
  EXPECT_EQ(d.topic, "code");
  // Files in byte order of their relative paths, each after a path header.
  const std::string want = "README.md\n# proj\nZed.txt\ncapital first in byte order\nsrc/a/util.py\ndef f():\n    "
                           "return 1\nsrc/main.py\nprint('main')\n";
  EXPECT_EQ(d.text, want);
  ASSERT_EQ(d.marks.size(), 4u);
  const std::vector<int64_t> at = {0, int64_t(std::string("README.md\n# proj\n").size()),
                                   int64_t(std::string("README.md\n# proj\nZed.txt\ncapital first in byte order\n").size()),
                                   int64_t(want.find("src/main.py"))};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(d.marks[i].offset, at[i]);
    EXPECT_EQ(d.marks[i].special, Special::kPathHeader);
  }
  EXPECT_EQ(st.skipped_files["binary"], 1);
  EXPECT_EQ(st.skipped_files["generated"], 2);
  EXPECT_EQ(st.skipped_files["oversized"], 1);
}

TEST_F(IngestTest, LongRepositoriesSplitAtFileBoundaries) {
  std::vector<std::pair<std::string, std::string>> files;
  for (int i = 9; i >= 0; --i) files.emplace_back("f" + std::to_string(i) + ".py", std::string(30, char('a' + i)) + "\n");
  const auto parts = stitch_repository(files, "r", 100);
  ASSERT_EQ(parts.size(), 5u);  // 37-byte files ("fN.py\n" + 31): two fit in 100 bytes
  int64_t files_seen = 0;
  std::string joined;
  for (const Document& p : parts) {
    EXPECT_LE(p.text.size(), 100u);
    files_seen += int64_t(p.marks.size());
    EXPECT_EQ(p.marks.front().offset, 0);
    joined += p.text;
  }
  EXPECT_EQ(files_seen, 10);
  EXPECT_EQ(joined.find("f0.py\n"), 0u);
  EXPECT_LT(joined.find("f3.py"), joined.find("f4.py"));
  EXPECT_EQ(parts[1].origin, "r (part 2)");
}

TEST_F(IngestTest, CodeJsonlGroupedByRepository) {
  td::write_file(dir / "code.jsonl.zst",
                 td::zstd("{\"content\":\"b = 2\\n\",\"repo\":\"x/one\",\"path\":\"b.py\"}\n"
                          "{\"content\":\"z\",\"repo\":\"y/two\",\"path\":\"z.c\"}\n"
                          "{\"content\":\"a = 1\\n\",\"repo\":\"x/one\",\"path\":\"a.py\"}\n"
                          "{\"content\":\"\\u0000\\u0001bin\",\"repo\":\"x/one\",\"path\":\"c.bin\"}\n"));
  ASSERT_TRUE(run({spec("code.jsonl.zst", InputKind::kCodeJsonl)}).is_ok());
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0].origin, "x/one");
  EXPECT_EQ(docs[0].text, "a.py\na = 1\nb.py\nb = 2\n");
  EXPECT_EQ(docs[0].marks.size(), 2u);
  EXPECT_EQ(docs[1].text, "z.c\nz\n");
  EXPECT_EQ(st.skipped_files["binary"], 1);
  td::write_file(dir / "norepo.jsonl", "{\"content\":\"x\",\"path\":\"a\"}\n");
  Status s = run({spec("norepo.jsonl", InputKind::kCodeJsonl)});
  EXPECT_THAT(s.message(), HasSubstr("norepo.jsonl:1: code record needs string fields \"repo\" and \"path\""));
}

TEST_F(IngestTest, RolloutsAreTaggedWithTheirOutcome) {
  td::write_file(dir / "r.jsonl", "{\"text\":\"tried and won\",\"outcome\":\"success\"}\n"
                                   "{\"text\":\"tried and lost\",\"outcome\":\"failure\"}\n");
  ASSERT_TRUE(run({spec("r.jsonl", InputKind::kRollouts)}).is_ok());
  ASSERT_EQ(docs.size(), 2u);
  ASSERT_EQ(docs[0].marks.size(), 1u);
  EXPECT_EQ(docs[0].marks[0].offset, 0);
  EXPECT_EQ(docs[0].marks[0].special, Special::kSuccess);
  EXPECT_EQ(docs[1].marks[0].special, Special::kFailure);
  td::write_file(dir / "r2.jsonl", "{\"text\":\"no outcome\"}\n");
  EXPECT_THAT(run({spec("r2.jsonl", InputKind::kRollouts)}).message(),
              HasSubstr("r2.jsonl:1: rollout has no \"outcome\" field"));
}

}  // namespace
}  // namespace mt
