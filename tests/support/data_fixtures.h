// data_fixtures.h — synthetic corpora for the data pipeline tests: seeded
// pseudo-word documents with topic-specific vocabularies (no third-party
// text), JSONL writers (plain, gzip, zstd) and a helper that builds a small
// dataset directory through the real build pipeline. Header-only.
#pragma once
#include <gtest/gtest.h>
#include <stdlib.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/data_build.h"
#include "support/temp_dir.h"

namespace mt::testdata {

namespace fs = std::filesystem;

inline uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A pseudo-word from topic t's vocabulary (each topic its own syllables).
inline std::string word(int topic, uint64_t& rng) {
  static const char* kSyll[4][8] = {{"ka", "ro", "mi", "tu", "sel", "van", "dor", "pe"},
                                    {"zu", "qix", "bla", "fo", "gri", "nem", "wat", "ly"},
                                    {"in", "for", "ret", "def", "var", "let", "ptr", "cls"},
                                    {"sto", "ham", "eru", "lio", "pax", "ten", "ubi", "ora"}};
  std::string w;
  const int n = 1 + int(splitmix(rng) % 3);
  for (int i = 0; i < n; ++i) w += kSyll[topic % 4][splitmix(rng) % 8];
  return w;
}

// A document of `words` pseudo-words in lines of about 10.
inline std::string document(int topic, int words, uint64_t seed) {
  uint64_t rng = seed * 7919 + uint64_t(topic);
  std::string s;
  for (int i = 0; i < words; ++i) {
    s += word(topic, rng);
    s += (i % 10 == 9) ? "\n" : " ";
  }
  s += "\n";
  return s;
}

inline void write_file(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline std::string gzip(const std::string& data) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, uLong(data.size())) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = uInt(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

inline std::string zstd(const std::string& data) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3));
  return out;
}

// JSONL with text/topic/quality metadata: `per_bucket` documents for each of
// the topics x quality levels; document lengths vary with the bucket so
// buckets differ in size.
inline std::string labelled_jsonl(const std::vector<std::string>& topics, int n_quality, int per_bucket,
                                  uint64_t seed = 1, int words = 20) {
  std::string out;
  for (size_t t = 0; t < topics.size(); ++t)
    for (int q = 0; q < n_quality; ++q)
      for (int d = 0; d < per_bucket + int(t + size_t(q)) % 4; ++d) {
        nlohmann::json j;
        j["text"] = document(int(t), words + int((seed * 31 + uint64_t(d) * 17 + t * 7 + uint64_t(q)) % 60),
                             seed * 1000003 + t * 10007 + uint64_t(q) * 101 + uint64_t(d));
        j["topic"] = topics[t];
        j["quality"] = q;
        out += j.dump() + "\n";
      }
  return out;
}

// Builds a dataset from JSONL text through build_dataset; returns its dir.
inline std::string build_labelled_dataset(const std::string& root, const std::string& jsonl, double eval_frac = 0.1,
                                          int64_t vocab = 400) {
  const std::string corpus = root + "/corpus.jsonl";
  write_file(corpus, jsonl);
  const std::string cfg_text = "[[input]]\npath = \"" + corpus + "\"\n[tokenizer]\nvocab_size = " +
                               std::to_string(vocab) + "\n[split]\neval_frac = " + std::to_string(eval_frac) + "\n";
  auto cfg = parse_data_build_config(cfg_text, root + "/data.toml");
  EXPECT_TRUE(cfg.is_ok()) << cfg.status().message();
  const std::string out = root + "/dataset";
  BuildReport rep;
  Status s = build_dataset(cfg.value(), out, rep);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return out;
}

using ::mt::testing::TempDir;  // support/temp_dir.h

}  // namespace mt::testdata
