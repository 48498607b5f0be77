// data_provenance_test.cpp — every document of a built dataset can be traced
// back to its source: `data inspect --docs --json` lists each one with its
// file, line, byte offset (and piece offset for long documents split by
// limits.max_doc_bytes), and the source record at that place, decoded from
// the shard, is the document's text; `data show` prints it with its labels.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/line_reader.h"
#include "support/e2e.h"

namespace mt::e2e {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

void put(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  write_file(path, bytes);
}

std::string words(uint64_t seed, int n) {
  static const char* syl[] = {"ka", "ro", "mi", "tu", "sel", "van", "dor", "pe", "zu", "qix"};
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  std::string s;
  for (int k = 0; k < n; ++k) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const uint64_t w = x % 900;
    s += std::string(syl[w % 10]) + syl[(w / 10) % 10] + syl[w / 100];
    s += (k % 9 == 8) ? "\n" : " ";
  }
  return s;
}

// The bytes of `path` (decompressed when .gz), as the build read them.
std::string source_bytes(const std::string& path) {
  auto r = LineReader::open(path);
  std::string all;
  EXPECT_TRUE(r.is_ok()) << path;
  if (r.is_ok()) EXPECT_TRUE(r.value()->read_all(all).is_ok());
  return all;
}

TEST(DataProvenance, EveryDocumentLeadsBackToItsSource) {
  TempDir tmp;
  std::string web;
  for (int i = 0; i < 60; ++i) web += json{{"text", words(uint64_t(i), 30 + i * 7 % 120)}, {"id", i}}.dump() + "\n";
  web += "\n";                                                           // a blank line: lines still count
  web += json{{"text", words(999, 3000)}}.dump() + "\n";                 // ~20 KB: split by the 4 KiB cap
  put(tmp / "corpus/web.jsonl", web);
  for (int f = 0; f < 4; ++f) put(tmp / ("corpus/notes/n" + std::to_string(f) + ".txt"), words(uint64_t(100 + f), 200));
  const std::string cfg = tmp / "data.toml";
  write_file(cfg, "[[input]]\npath = \"corpus/web.jsonl\"\n[[input]]\npath = \"corpus/notes\"\ntopic = \"notes\"\n"
                  "[limits]\nmax_doc_bytes = 4096\n[tokenizer]\nvocab_size = 330\n[topics]\nn_topics = 2\n"
                  "[quality]\nn_quality = 2\n[split]\neval_frac = 0.2\n");
  const std::string ds = tmp / "ds";
  const ProcessResult b = run_process({moetrain_binary(), "data", "build", "--config", cfg, "--out", ds, "--quiet"});
  ASSERT_EQ(b.exit_code, 0) << b;
  EXPECT_NE(b.out.find("documents over limits.max_doc_bytes: 1 split"), std::string::npos) << b;

  const ProcessResult list = run_process({moetrain_binary(), "data", "inspect", ds, "--docs", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list;
  const json manifest = json::parse(read_file(ds + "/manifest.json"));
  std::istringstream lines(list.out);
  std::string line;
  int64_t n = 0, pieces = 0;
  std::set<int64_t> ids;
  while (std::getline(lines, line)) {
    const json d = json::parse(line);
    ++n;
    ids.insert(d["id"].get<int64_t>());
    // The document's text, from the dataset.
    const ProcessResult show = run_process({moetrain_binary(), "data", "show", ds, std::to_string(d["id"].get<int64_t>()), "--json"});
    ASSERT_EQ(show.exit_code, 0) << show;
    const json shown = json::parse(show.out);
    const std::string text = shown["text"].get<std::string>();
    EXPECT_EQ(shown["bucket"], d["bucket"]);
    EXPECT_EQ(shown["topic"].get<std::string>() + "/" + shown["quality"].get<std::string>(), d["bucket"]);
    // The same text at the recorded place of the source.
    const std::string src = d["source"].get<std::string>();
    const int64_t line_no = d["line"].get<int64_t>(), offset = d["offset"].get<int64_t>();
    const int64_t piece = d["text_offset"].get<int64_t>();
    std::string original;
    if (line_no > 0) {
      const std::string bytes = source_bytes(src);
      const size_t end = bytes.find('\n', size_t(offset));
      const json rec = json::parse(bytes.substr(size_t(offset), end - size_t(offset)));
      original = rec["text"].get<std::string>();
      // The line number agrees with the byte offset.
      EXPECT_EQ(std::count(bytes.begin(), bytes.begin() + offset, '\n') + 1, line_no) << src;
    } else {
      original = source_bytes(src);
    }
    if (piece > 0 || text.size() < original.size()) ++pieces;
    ASSERT_LE(size_t(piece) + text.size(), original.size()) << line;
    EXPECT_EQ(original.substr(size_t(piece), text.size()), text) << line;
  }
  EXPECT_EQ(n, manifest["totals"]["train_documents"].get<int64_t>() + manifest["totals"]["eval_documents"].get<int64_t>());
  EXPECT_EQ(int64_t(ids.size()), n);  // ids are unique
  EXPECT_EQ(*ids.rbegin(), n - 1);    // and dense
  EXPECT_GE(pieces, 5);               // the long record became pieces of at most 4 KiB

  // Text output and one bucket.
  const ProcessResult one = run_process({moetrain_binary(), "data", "inspect", ds, "--docs", "--bucket", "notes/q1"});
  ASSERT_EQ(one.exit_code, 0) << one;
  EXPECT_NE(one.out.find("notes/q1"), std::string::npos) << one;
  EXPECT_EQ(one.out.find("notes/q0"), std::string::npos) << one;
  const ProcessResult missing = run_process({moetrain_binary(), "data", "show", ds, "100000"});
  EXPECT_EQ(missing.exit_code, 1) << missing;
  EXPECT_NE(missing.err.find("no document with id 100000"), std::string::npos) << missing;
}

}  // namespace
}  // namespace mt::e2e
