// ladder_quickstart_test.cpp — golden: the quickstart scaling ladder as
// measured on a 2-core machine (`moetrain ladder run
// configs/ladder/quickstart.toml`, results committed in
// tests/golden/data/ladder_quickstart_results.jsonl: four rungs of 0.23M to
// 1.2M active parameters with cooldown branches at 1/4 and 1/2 of each
// budget, and a fifth rung of 2.1M). Fitted on everything but the fifth rung
// (its branches included), the law predicts the fifth rung's final held-out
// loss within 2%, inside the bootstrap interval (docs/ladder.md reports it).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <regex>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "core/file_io.h"
#include "ladder/analysis.h"

namespace mt::ladder {
namespace {

TEST(LadderQuickstart, FourRungsPredictTheFifth) {
  auto runs = load_results(MT_SOURCE_DIR "/tests/golden/data/ladder_quickstart_results.jsonl");
  ASSERT_TRUE(runs) << runs.status().message();
  ASSERT_EQ(runs->size(), 15u);
  LadderOptions opt;
  opt.hold_out = {"r5"};
  opt.bootstrap = {100, 0, 0.95};
  auto a = analyze(*runs, opt);
  ASSERT_TRUE(a) << a.status().message();
  EXPECT_EQ(a->used.size(), 14u);  // r5's own cooldown branches are fitted; r5 is not
  ASSERT_EQ(a->held_out.size(), 1u);
  const HeldOutRun& h = a->held_out[0];
  EXPECT_EQ(h.run.name, "r5");
  EXPECT_LT(std::abs(h.error), 0.02) << "predicted " << h.predicted.value << ", observed " << h.run.loss;
  EXPECT_TRUE(h.inside) << "[" << h.predicted.lo << ", " << h.predicted.hi << "] misses " << h.run.loss;
}

// Without r5's cooldown branches the prediction is a pure extrapolation in N.
TEST(LadderQuickstart, FourRungsAloneStillPredictTheFifth) {
  auto runs = load_results(MT_SOURCE_DIR "/tests/golden/data/ladder_quickstart_results.jsonl");
  ASSERT_TRUE(runs) << runs.status().message();
  LadderOptions opt;
  opt.hold_out = {"r5", "r5@0.25", "r5@0.5"};
  opt.bootstrap = {100, 0, 0.95};
  auto a = analyze(*runs, opt);
  ASSERT_TRUE(a) << a.status().message();
  EXPECT_EQ(a->used.size(), 12u);
  for (const HeldOutRun& h : a->held_out)
    RecordProperty(h.run.name + "_error_percent", std::to_string(100.0 * h.error));
  EXPECT_LT(std::abs(a->held_out.back().error), 0.05);
}

// docs/ladder.md's "Measured" section quotes these results and these fits: a
// test fails when a quoted figure no longer matches them (a results file
// regenerated without the doc, a fit that changed, a figure edited by hand).
TEST(LadderQuickstart, TheDocQuotesTheseResultsAndFits) {
  auto read = read_file(MT_SOURCE_DIR "/docs/ladder.md");
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  const std::string& doc = read.value();
  auto runs = load_results(MT_SOURCE_DIR "/tests/golden/data/ladder_quickstart_results.jsonl");
  ASSERT_TRUE(runs) << runs.status().message();
  std::map<std::string, double> loss;
  for (const ladder::Run& r : *runs) loss[r.name] = r.loss;
  // | r1 | 64 x 2 | 0.23M | 35K, 70K, 139K | 6.641, 6.349, 6.224 |
  const std::regex row(R"(\| (r[0-9]) \| [0-9]+ x [0-9]+ \| [^|]+\| [^|]+\| ([0-9.]+), ([0-9.]+), \**([0-9.]+)\** \|)");
  int rows = 0;
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), row); it != std::sregex_iterator(); ++it, ++rows) {
    const std::string rung = (*it)[1];
    const char* names[3] = {"@0.25", "@0.5", ""};
    for (int k = 0; k < 3; ++k) {
      const std::string name = rung + names[k];
      ASSERT_TRUE(loss.count(name)) << name;
      EXPECT_EQ((*it)[size_t(k) + 2].str(), fmt::format("{:.3f}", loss[name])) << name << " in docs/ladder.md";
    }
  }
  EXPECT_EQ(rows, 5) << "the table of docs/ladder.md's Measured section";
  // | r1-r4 with their branches (12 runs): r5 never seen | 4.1510 | [3.841, 4.627] | +2.68% |
  // The fits run in double on this CPU's kernels: figures match to within
  // 1.5 units of the last digit the doc prints, not to the bit.
  auto predicted = [&](std::vector<std::string> hold_out, int64_t drop) {
    LadderOptions opt;
    opt.hold_out = std::move(hold_out);
    opt.drop_highest_loss = drop;
    opt.bootstrap = {20, 0, 0.95};  // the point estimate does not depend on it
    auto a = analyze(*runs, opt);
    EXPECT_TRUE(a) << a.status().message();
    for (const HeldOutRun& h : a->held_out)
      if (h.run.name == "r5") return std::pair(h.predicted.value, 100 * h.error);
    return std::pair(std::nan(""), std::nan(""));
  };
  auto check = [&](const std::string& label, std::pair<double, double> fit) {
    const size_t at = doc.find("| " + label + " | ");
    ASSERT_NE(at, std::string::npos) << "docs/ladder.md lost the row " << label;
    const std::string line = doc.substr(at, doc.find('\n', at) - at);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(line, m, std::regex(R"(\| ([0-9.]+) \| \[[^\]]+\] \| ([+-][0-9.]+)% \|)"))) << line;
    EXPECT_NEAR(std::stod(m[1].str()), fit.first, 1.5e-4) << line;
    EXPECT_NEAR(std::stod(m[2].str()), fit.second, 1.5e-2) << line;
  };
  check("r1-r4 with their branches (12 runs): r5 never seen", predicted({"r5", "r5@0.25", "r5@0.5"}, 0));
  check("the same plus r5's two short branches (14 runs)", predicted({"r5"}, 0));
  check("r1-r4 (12 runs), 3 highest-loss runs dropped", predicted({"r5", "r5@0.25", "r5@0.5"}, 3));
}

}  // namespace
}  // namespace mt::ladder
