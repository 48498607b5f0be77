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

}  // namespace
}  // namespace mt::ladder
