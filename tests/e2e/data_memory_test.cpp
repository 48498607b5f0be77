// data_memory_test.cpp — `data build` streams: a corpus three times larger
// costs the same peak memory up to the per-document term, and one valid
// 50 MB JSONL line builds in seconds in bounded memory (docs/data.md, "Build
// pipeline": the bound). The build prints its own peak RSS.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "support/e2e.h"

namespace mt::e2e {
namespace {

namespace fs = std::filesystem;

// Writes `n_docs` JSONL documents of about `doc_bytes` pseudo-random words
// (a 900-word vocabulary) straight to disk.
void write_corpus(const std::string& path, int64_t n_docs, int64_t doc_bytes, uint64_t seed) {
  static const char* syl[] = {"ka", "ro", "mi", "tu", "sel", "van", "dor", "pe", "zu", "qix"};
  std::ofstream out(path, std::ios::binary);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  std::string text;
  for (int64_t d = 0; d < n_docs; ++d) {
    text.clear();
    for (int64_t k = 0; int64_t(text.size()) < doc_bytes; ++k) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      const uint64_t w = x % 900;
      text += syl[w % 10];
      text += syl[(w / 10) % 10];
      text += syl[w / 100];
      text += (k % 11 == 10) ? '\n' : ' ';
    }
    out << nlohmann::json{{"text", text}}.dump() << '\n';
  }
}

int64_t peak_mib(const ProcessResult& r) {
  std::smatch m;
  if (!std::regex_search(r.out, m, std::regex("peak memory (\\d+) MiB"))) return -1;
  return std::stoll(m[1]);
}

struct Built {
  ProcessResult r;
  int64_t peak = -1;
};

Built build(const TempDir& tmp, const std::string& corpus, const std::string& out, const std::string& model) {
  const std::string cfg = tmp / (out + ".toml");
  write_file(cfg, "[[input]]\npath = \"" + corpus + "\"\n[tokenizer]\nmodel = \"" + model +
                      "\"\n[topics]\nn_topics = 4\nsample_docs = 400\n[quality]\nn_quality = 2\nsample_docs = 400\n"
                      "[build]\nbatch_bytes = 4194304\n[split]\neval_frac = 0.01\n");
  Built b;
  b.r = run_process({moetrain_binary(), "data", "build", "--config", cfg, "--out", tmp / out, "--quiet"}, 600,
                    kPassiveOmp);
  b.peak = peak_mib(b.r);
  return b;
}

std::string tokenizer(const TempDir& tmp) {
  write_corpus(tmp / "tok.jsonl", 200, 4000, 99);
  const ProcessResult t = run_process({moetrain_binary(), "tokenizer", "train", "--input", tmp / "tok.jsonl", "--out",
                                       tmp / "tok.model", "--vocab-size", "1000"});
  EXPECT_EQ(t.exit_code, 0) << t;
  return tmp / "tok.model";
}

TEST(DataMemory, AThreeTimesLargerCorpusCostsTheSameMemory) {
  TempDir tmp;
  const std::string model = tokenizer(tmp);
  write_corpus(tmp / "small.jsonl", 2500, 8000, 1);   // 20 MB
  write_corpus(tmp / "large.jsonl", 7500, 8000, 2);   // 60 MB
  const Built small = build(tmp, tmp / "small.jsonl", "small", model);
  ASSERT_EQ(small.r.exit_code, 0) << small.r;
  const Built large = build(tmp, tmp / "large.jsonl", "large", model);
  ASSERT_EQ(large.r.exit_code, 0) << large.r;
  ASSERT_GT(small.peak, 0) << small.r;
  ASSERT_GT(large.peak, 0) << large.r;
  std::printf("[data memory] 20 MB corpus: %lld MiB peak; 60 MB corpus: %lld MiB peak\n", (long long)small.peak,
              (long long)large.peak);
  // 40 MB more text and 5000 more documents: at most the per-document term
  // (~400 B each, 2 MB) and allocator noise, never the text.
  EXPECT_LT(large.peak - small.peak, 12) << small.r.out << large.r.out;
  // The fixed part of the bound at these settings: two cross-fitted token
  // n-gram models (96 MiB), two word caches (20 MiB), batches (8 MiB),
  // samples (13 MiB), the process itself (~30 MiB).
  EXPECT_LT(large.peak, 200) << large.r.out;
}

TEST(DataMemory, AFiftyMegabyteLineBuildsInSecondsInBoundedMemory) {
  TempDir tmp;
  const std::string model = tokenizer(tmp);
  write_corpus(tmp / "big.jsonl", 1, 50 << 20, 5);
  write_corpus(tmp / "rest.jsonl", 50, 4000, 6);
  {
    std::ofstream out(tmp / "big.jsonl", std::ios::app | std::ios::binary);
    out << read_file(tmp / "rest.jsonl");
  }
  const double t0 = now_s();
  const Built b = build(tmp, tmp / "big.jsonl", "ds", model);
  const double seconds = now_s() - t0;
  ASSERT_EQ(b.r.exit_code, 0) << b.r;
  EXPECT_NE(b.r.out.find("documents over limits.max_doc_bytes: 1 split"), std::string::npos) << b.r;
  // 3 x the line (read, parsed, moved) plus the fixed part of the bound.
  EXPECT_LT(b.peak, 3 * 50 + 200) << b.r.out;
  EXPECT_LT(seconds, 120) << b.r.out;
  const auto m = nlohmann::json::parse(read_file(tmp / "ds/manifest.json"));
  EXPECT_GE(m["totals"]["train_documents"].get<int64_t>() + m["totals"]["eval_documents"].get<int64_t>(), 50 + 50);
}

}  // namespace
}  // namespace mt::e2e
