// data_quality_build_test.cpp — quality levels that mean quality, through
// `moetrain data build`: on a mixed corpus of Debian-shipped text (Python
// reference pages, man pages, licences) where part of the Python pages are
// also present with the words of every line shuffled, the shuffled pages get
// the lowest scores and land in the bottom levels of their topic. With a
// reference set (other Python pages) the ensemble of the fastText
// classifier and the token n-gram model separates them with AUC >= 0.9;
// without one the cross-fitted n-gram model alone gets close (its figure is
// in docs/data-quality.md). The scores are read from the provenance files.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "support/e2e.h"

namespace mt::e2e {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const char* kPython = "/usr/share/doc/python3.11/html/_sources/library";

std::vector<fs::path> files_in(const std::string& dir, const std::string& suffix) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().string().ends_with(suffix)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string shuffle_words(const std::string& text, std::mt19937_64& rng) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    std::istringstream ws(line);
    std::vector<std::string> w{std::istream_iterator<std::string>(ws), {}};
    std::shuffle(w.begin(), w.end(), rng);
    for (size_t i = 0; i < w.size(); ++i) out += (i ? " " : "") + w[i];
    out += "\n";
  }
  return out;
}

void put(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  write_file(path, bytes);
}

// Area under the ROC curve of `score` for original (positive) vs shuffled.
double auc(const std::vector<double>& orig, const std::vector<double>& shuf) {
  double wins = 0;
  for (double a : orig)
    for (double b : shuf) wins += a > b ? 1.0 : a == b ? 0.5 : 0.0;
  return wins / double(orig.size() * shuf.size());
}

struct Scored {
  std::vector<double> orig, shuf;
  int64_t shuf_bottom = 0, shuf_total = 0;  // shuffled pages in the lower half of the levels
};

Scored read_scores(const std::string& ds) {
  const ProcessResult r = run_process({moetrain_binary(), "data", "inspect", ds, "--docs", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r;
  Scored s;
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) {
    const json d = json::parse(line);
    if (d["topic"] != "python") continue;
    const bool shuffled = d["source"].get<std::string>().find("/shuffled/") != std::string::npos;
    const double c = d["scores"]["combined"].get<double>();
    (shuffled ? s.shuf : s.orig).push_back(c);
    if (shuffled) {
      ++s.shuf_total;
      s.shuf_bottom += d["quality"] == "q0" || d["quality"] == "q1";
    }
  }
  return s;
}

TEST(DataQualityBuild, ShuffledPagesLandInTheBottomLevels) {
  const auto python = files_in(kPython, ".rst.txt");
  if (python.size() < 250) GTEST_SKIP() << kPython << " (python3-doc) is not installed";
  TempDir tmp;
  std::mt19937_64 rng(11);
  // 160 pages as the corpus, 60 of them also shuffled; 80 other pages as the reference.
  for (size_t i = 0; i < 160; ++i) {
    const std::string text = read_file(python[i].string());
    put(tmp / ("corpus/python/" + python[i].filename().string()), text);
    if (i % 8 < 3) put(tmp / ("corpus/shuffled/" + python[i].filename().string()), shuffle_words(text, rng));
  }
  for (size_t i = 160; i < 240; ++i) put(tmp / ("reference/" + python[i].filename().string()), read_file(python[i].string()));
  std::string common = "[[input]]\npath = \"corpus/python\"\ntopic = \"python\"\n"
                       "[[input]]\npath = \"corpus/shuffled\"\ntopic = \"python\"\n"
                       "[[input]]\npath = \"/usr/share/man/man2\"\nextensions = [\".2.gz\"]\ntopic = \"man\"\nutf8 = \"repair\"\n"
                       "[[input]]\npath = \"/usr/share/common-licenses\"\ntopic = \"legal\"\n"
                       "[split]\neval_frac = 0\n[quality]\nn_quality = 4\n";
  write_file(tmp / "ref.toml", common + "reference = [\"reference\"]\n[tokenizer]\nvocab_size = 1024\nsample_bytes = 1048576\n");
  const ProcessResult a = run_process({moetrain_binary(), "data", "build", "--config", tmp / "ref.toml", "--out",
                                       tmp / "ref", "--quiet"}, 600, kPassiveOmp);
  ASSERT_EQ(a.exit_code, 0) << a;
  const json m = json::parse(read_file(tmp / "ref/manifest.json"));
  EXPECT_EQ(m["labels"]["quality"], "ensemble") << m["labels"];
  EXPECT_EQ(m["labels"]["levels_within"], "topic");
  const Scored with_ref = read_scores(tmp / "ref");
  ASSERT_EQ(with_ref.shuf_total, 60);
  const double auc_ref = auc(with_ref.orig, with_ref.shuf);
  std::printf("[quality build] ensemble with a reference: AUC %.3f, %lld of %lld shuffled pages in q0-q1\n", auc_ref,
              (long long)with_ref.shuf_bottom, (long long)with_ref.shuf_total);
  EXPECT_GE(auc_ref, 0.9);
  EXPECT_GE(with_ref.shuf_bottom, 54);  // 90% in the lower half (chance: 50%)

  // No reference: the cross-fitted token n-gram model alone, same tokenizer.
  write_file(tmp / "noref.toml", common + "[tokenizer]\nmodel = \"" + tmp / "ref/tokenizer.model" + "\"\n");
  const ProcessResult b = run_process({moetrain_binary(), "data", "build", "--config", tmp / "noref.toml", "--out",
                                       tmp / "noref", "--quiet"}, 600, kPassiveOmp);
  ASSERT_EQ(b.exit_code, 0) << b;
  const Scored no_ref = read_scores(tmp / "noref");
  const double auc_noref = auc(no_ref.orig, no_ref.shuf);
  std::printf("[quality build] perplexity without a reference: AUC %.3f, %lld of %lld shuffled pages in q0-q1\n",
              auc_noref, (long long)no_ref.shuf_bottom, (long long)no_ref.shuf_total);
  EXPECT_GE(auc_noref, 0.8);
}

}  // namespace
}  // namespace mt::e2e
