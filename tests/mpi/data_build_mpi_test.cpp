// data_build_mpi_test.cpp — `mpirun -np N moetrain data build` splits the
// ingest items (files, repositories) across ranks, and writes the dataset a
// one-rank build writes, byte for byte: shards, provenance files, manifest
// and tokenizer, with exact and near duplicates dropped across ranks.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "support/e2e.h"
#include "support/mpi.h"

namespace mt::e2e {
namespace {

namespace fs = std::filesystem;

void put(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  write_file(path, bytes);
}

// Every regular file below dir, by relative path, with its bytes.
std::map<std::string, std::string> tree(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = read_file(e.path().string());
  return out;
}

// A corpus of several items: JSONL files (one with a duplicate of another's
// record and a near copy of it), plain text files and two repositories.
std::string write_corpus(const TempDir& tmp) {
  const std::string root = tmp / "corpus";
  auto doc = [](int i, int n) {  // n pseudo-random words of a 900-word vocabulary
    static const char* syl[] = {"ka", "ro", "mi", "tu", "sel", "van", "dor", "pe", "zu", "qix"};
    uint64_t x = uint64_t(i) * 0x9E3779B97F4A7C15ull + 1;
    std::string s;
    for (int k = 0; k < n; ++k) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      const uint64_t w = x % 900;
      s += std::string(syl[w % 10]) + syl[(w / 10) % 10] + syl[w / 100];
      s += (k % 11 == 10) ? "\n" : " ";
    }
    return s;
  };
  for (int f = 0; f < 5; ++f) {
    std::string jsonl;
    for (int i = 0; i < 40; ++i)
      jsonl += nlohmann::json{{"text", doc(f * 100 + i, 40 + (i * 13) % 200)}}.dump() + "\n";
    if (f == 3) jsonl += nlohmann::json{{"text", doc(7, 40 + (7 * 13) % 200)}}.dump() + "\n";  // exact dup of file 0
    if (f == 4) jsonl += nlohmann::json{{"text", doc(111, 40 + (11 * 13) % 200) + " coda"}}.dump() + "\n";  // near
    put(root + "/web/part" + std::to_string(f) + ".jsonl", jsonl);
  }
  for (int f = 0; f < 6; ++f) put(root + "/books/b" + std::to_string(f) + ".txt", doc(500 + f, 300));
  for (const char* repo : {"r1", "r2"})
    for (int f = 0; f < 3; ++f)
      put(root + "/repos/" + repo + "/src/f" + std::to_string(f) + ".py",
                 "def f" + std::to_string(f) + "(x):\n    return x + " + std::to_string(f) + "\n" + repo + "\n");
  const std::string cfg = tmp / "data.toml";
  write_file(cfg, "[[input]]\npath = \"corpus/web\"\n"
                  "[[input]]\npath = \"corpus/books\"\nkind = \"text\"\ntopic = \"books\"\n"
                  "[[input]]\npath = \"corpus/repos\"\nkind = \"repos\"\ntopic = \"code\"\n"
                  "[tokenizer]\nvocab_size = 330\n[topics]\nn_topics = 2\n[quality]\nn_quality = 2\n"
                  "[split]\neval_frac = 0.1\n");
  return cfg;
}

TEST(DataBuildMpi, RanksWriteTheOneRankDatasetByteForByte) {
  TempDir tmp;
  const std::string cfg = write_corpus(tmp);
  const ProcessResult one =
      run_process({moetrain_binary(), "data", "build", "--config", cfg, "--out", tmp / "one", "--quiet"}, 120, kPassiveOmp);
  ASSERT_EQ(one.exit_code, 0) << one;
  const auto want = tree(tmp / "one");
  const auto manifest = nlohmann::json::parse(want.at("manifest.json"));
  EXPECT_EQ(manifest["ingest"]["dropped"]["duplicate"], 1) << manifest["ingest"].dump();
  EXPECT_EQ(manifest["ingest"]["dropped"]["near_duplicate"], 1) << manifest["ingest"].dump();
  for (int np : {2, 3}) {
    const std::string out = tmp / ("np" + std::to_string(np));
    const ProcessResult r = mpirun(np, {moetrain_binary(), "data", "build", "--config", cfg, "--out", out, "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r;
    ASSERT_TRUE(fs::exists(out + "/manifest.json")) << "mpirun produced no dataset: " << r;
    const auto got = tree(out);
    ASSERT_EQ(got.size(), want.size()) << np;
    for (const auto& [rel, bytes] : want) EXPECT_TRUE(got.count(rel) && got.at(rel) == bytes) << np << " ranks: " << rel;
  }
}

// A bad record on any rank fails the whole job with the one-rank message.
TEST(DataBuildMpi, ABadRecordOnAnyRankFailsEveryRankNamingIt) {
  TempDir tmp;
  const std::string cfg = write_corpus(tmp);
  write_file(tmp / "corpus/web/part4.jsonl", "{\"text\": \"fine\"}\n{\"text\": 3}\n");
  const ProcessResult r = mpirun(2, {moetrain_binary(), "data", "build", "--config", cfg, "--out", tmp / "ds", "--quiet"});
  EXPECT_NE(r.exit_code, 0) << r;
  EXPECT_NE(r.err.find("part4.jsonl:2: field \"text\" must be a string"), std::string::npos) << r;
  EXPECT_FALSE(fs::exists(tmp / "ds"));
}

}  // namespace
}  // namespace mt::e2e
