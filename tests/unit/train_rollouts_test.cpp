// train_rollouts_test.cpp — GRPO's model-free parts (train/rollouts.h):
// group-relative advantages (scaled or not, zero for a group that scored
// alike), the token weights of the two aggregations, and a rollout's row
// and positions (context flagged, completion trained, padding flagged).
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "core/token_flags.h"
#include "train/rollouts.h"

namespace mt {
namespace {

TEST(GroupAdvantages, CenteredPerGroupAndScaledOnlyUnderGrpo) {
  const std::vector<double> r = {1, 0, 0, 0, /* all alike: */ 1, 1, 1, 1};
  const std::vector<float> grpo = group_advantages(r, 4, RlLoss::kGrpo);
  const std::vector<float> dr = group_advantages(r, 4, RlLoss::kDrGrpo);
  // Group 1: mean 0.25, population std sqrt(3)/4.
  const double sd = std::sqrt(3.0) / 4.0;
  EXPECT_NEAR(grpo[0], 0.75 / (sd + 1e-4), 1e-5);
  EXPECT_NEAR(grpo[1], -0.25 / (sd + 1e-4), 1e-5);
  EXPECT_FLOAT_EQ(dr[0], 0.75f);
  EXPECT_FLOAT_EQ(dr[1], -0.25f);
  EXPECT_NEAR(std::accumulate(grpo.begin(), grpo.begin() + 4, 0.0), 0.0, 1e-5);
  for (int i = 4; i < 8; ++i) {
    EXPECT_EQ(grpo[size_t(i)], 0.0f) << "a group that scored alike carries no signal";
    EXPECT_EQ(dr[size_t(i)], 0.0f);
  }
}

TEST(RolloutTokenWeight, PerCompletionMeanOrOneConstant) {
  EXPECT_FLOAT_EQ(rollout_token_weight(RlLoss::kGrpo, 8, 4, 16), 1.0f / 32.0f);
  EXPECT_FLOAT_EQ(rollout_token_weight(RlLoss::kDrGrpo, 8, 4, 16), 1.0f / 128.0f);
  EXPECT_FLOAT_EQ(rollout_token_weight(RlLoss::kDrGrpo, 8, 9, 16), 1.0f / 128.0f) << "no length bias";
}

TEST(RolloutRow, ContextFlaggedCompletionTrainedPaddingFlagged) {
  const std::vector<int32_t> context = {0, 11, 12}, completion = {21, 22, 0};
  const int64_t T = 7, stride = T + 1;
  std::vector<int32_t> row(stride);
  rollout_row(context, completion, 0, stride, row.data());
  const std::vector<int32_t> want = {without_loss(0), without_loss(11), without_loss(12), 21, 22, 0,
                                     without_loss(0), without_loss(0)};
  EXPECT_EQ(row, want);
  std::vector<float> w(T), a(T);
  rollout_positions(3, 3, 0.5f, -2.0f, T, w.data(), a.data());
  // Position t predicts row[t + 1]: the completion is predicted at positions 2, 3, 4.
  const std::vector<float> want_w = {0, 0, 0.5f, 0.5f, 0.5f, 0, 0};
  EXPECT_EQ(w, want_w);
  for (int64_t t = 0; t < T; ++t) EXPECT_EQ(a[size_t(t)], w[size_t(t)] > 0 ? -2.0f : 0.0f);
  for (int64_t t = 0; t < T; ++t)
    EXPECT_EQ(w[size_t(t)] > 0, target_of(row[size_t(t + 1)]) >= 0) << "weights where the targets are: " << t;
}

TEST(CompletionIds, FlaggedIdsSurviveTheFloatExchangeAndNeverLookLikePadding) {
  for (int32_t id : {0, 1, 7, 511, (1 << 24) - 3}) {
    EXPECT_EQ(completion_id_from_float(completion_id_to_float(id)), id);
    EXPECT_EQ(completion_id_from_float(completion_id_to_float(without_loss(id))), without_loss(id));
    EXPECT_NE(completion_id_to_float(id), -1.0f);
    EXPECT_NE(completion_id_to_float(without_loss(id)), -1.0f);
  }
}

}  // namespace
}  // namespace mt
