// train_context_loss_test.cpp — the same-tokens comparison of `eval
// --positions` (train/context_loss.h): each length scores the windows' last
// tokens from the last L ids, exactly as a forward of those ids alone would;
// a document that starts inside the shortest context makes every length see
// the same context, so every gain is zero; the table's gains and standard
// errors are the paired per-window figures. On the shared tiny MoE
// (support/fixtures.h), dropless, so every length routes its tokens alike.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/transformer.h"
#include "model/weights.h"
#include "support/fixtures.h"
#include "support/random.h"
#include "train/context_loss.h"

namespace mt {
namespace {

std::vector<float> params_of(const ModelConfig& c) {
  ParamLayout L;
  build_layout(c, L);
  std::vector<float> p(size_t(L.total()));
  init_params(p.data(), L, c, 3);
  return p;
}

std::vector<int32_t> windows_of(int64_t B, int64_t T, int64_t V, uint64_t stream) {
  std::vector<int32_t> t(size_t(B * (T + 1)));
  for (size_t i = 0; i < t.size(); ++i)
    t[i] = int32_t(testing::rand_u32(9, stream, i) % uint32_t(V - 1));  // never V - 1
  return t;
}

double tail_mean(const std::vector<float>& losses, int64_t L, int64_t b, int64_t scored) {
  double s = 0;
  for (int64_t t = L - scored; t < L; ++t) s += losses[size_t(b * L + t)];
  return s / double(scored);
}

TEST(ContextLengthLoss, EachLengthScoresTheLastTokensFromTheLastIdsAlone) {
  const ModelConfig c = testing::tiny_moe_config();  // dropless: every length routes alike
  const std::vector<float> p = params_of(c);
  const int64_t B = 3, T = 64, min_len = 16, scored = 8;
  const std::vector<int32_t> w = windows_of(B, T, c.vocab_size, 1);
  Transformer full(c, B, T, MatmulPrecision::kFp32);
  full.forward(p.data(), w.data(), nullptr);
  ContextLengthScorer scorer(c, B, T, min_len, AttentionKernel::kAuto, -1);
  ASSERT_EQ(scorer.lengths(), (std::vector<int64_t>{64, 32, 16}));
  ContextLengthLoss acc;
  scorer.score(full.token_losses(), p.data(), nullptr, w.data(), acc);
  ASSERT_EQ(acc.scored, scored);
  ASSERT_EQ(acc.loss.size(), 3u);
  for (size_t i = 0; i < 3; ++i) ASSERT_EQ(acc.loss[i].size(), size_t(B));
  for (int64_t b = 0; b < B; ++b)
    EXPECT_DOUBLE_EQ(acc.loss[0][size_t(b)], tail_mean(full.token_losses(), T, b, scored));
  // Length 16 by hand: a forward of each window's last 17 ids on its own.
  const int64_t L = 16;
  std::vector<int32_t> rows;
  for (int64_t b = 0; b < B; ++b)
    rows.insert(rows.end(), w.begin() + b * (T + 1) + (T - L), w.begin() + (b + 1) * (T + 1));
  Transformer part(c, B, L, MatmulPrecision::kFp32);
  part.forward(p.data(), rows.data(), nullptr);
  for (int64_t b = 0; b < B; ++b)
    EXPECT_DOUBLE_EQ(acc.loss[2][size_t(b)], tail_mean(part.token_losses(), L, b, scored));
  // A random model's figures differ between lengths (the comparison is not vacuous).
  EXPECT_NE(acc.loss[0][0], acc.loss[2][0]);
}

TEST(ContextLengthLoss, ADocumentStartInsideTheShortestContextMakesEveryGainZero) {
  const ModelConfig c = testing::tiny_moe_config();  // dropless: every length routes alike
  const std::vector<float> p = params_of(c);
  const int64_t B = 2, T = 64, min_len = 16;
  const int32_t sep = int32_t(c.vocab_size - 1);
  std::vector<int32_t> w = windows_of(B, T, c.vocab_size, 2);
  for (int64_t b = 0; b < B; ++b)
    w[size_t(b * (T + 1) + T - 12)] = sep;  // the last document starts 11 ids from the end
  Transformer full(c, B, T, MatmulPrecision::kFp32);
  full.set_document_separator(sep);
  full.forward(p.data(), w.data(), nullptr);
  ContextLengthScorer scorer(c, B, T, min_len, AttentionKernel::kAuto, sep);
  ContextLengthLoss acc;
  scorer.score(full.token_losses(), p.data(), nullptr, w.data(), acc);
  const nlohmann::json t = acc.table();
  ASSERT_EQ(t["lengths"].size(), 3u);
  // The same document prefix at other absolute positions: RoPE is relative, so equal to rounding.
  for (int64_t b = 0; b < B; ++b)
    for (size_t i = 1; i < 3; ++i) EXPECT_NEAR(acc.loss[i][size_t(b)], acc.loss[0][size_t(b)], 1e-5) << b << " " << i;
  EXPECT_NEAR(t["lengths"][0]["gain"].get<double>(), 0.0, 1e-5);
  // Without masking the earlier document is context, and the lengths differ.
  ContextLengthScorer unmasked(c, B, T, min_len, AttentionKernel::kAuto, -1);
  Transformer plain(c, B, T, MatmulPrecision::kFp32);
  plain.forward(p.data(), w.data(), nullptr);
  ContextLengthLoss acc2;
  unmasked.score(plain.token_losses(), p.data(), nullptr, w.data(), acc2);
  EXPECT_GT(std::abs(acc2.loss[0][0] - acc2.loss[2][0]), 1e-4);
}

TEST(ContextLengthLoss, TableGivesPairedGainsAndStandardErrors) {
  ContextLengthLoss a;
  a.scored = 4;
  a.lengths = {8, 4};
  a.loss = {{1.0, 2.0, 3.0}, {1.5, 2.1, 3.8}};  // differences 0.5, 0.1, 0.8
  ContextLengthLoss all;
  all.add(a);
  const nlohmann::json t = all.table();
  EXPECT_EQ(t["windows"], 3);
  EXPECT_EQ(t["scored_per_window"], 4);
  EXPECT_DOUBLE_EQ(t["lengths"][0]["loss"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(t["lengths"][0]["se"].get<double>(), std::sqrt(1.0 / 3.0));
  EXPECT_NEAR(t["lengths"][0]["gain"].get<double>(), 1.4 / 3.0, 1e-12);
  const double m = 1.4 / 3.0;
  const double var = ((0.5 - m) * (0.5 - m) + (0.1 - m) * (0.1 - m) + (0.8 - m) * (0.8 - m)) / 2.0;
  EXPECT_NEAR(t["lengths"][0]["gain_se"].get<double>(), std::sqrt(var / 3.0), 1e-12);
  EXPECT_FALSE(t["lengths"][1].contains("gain")) << "the shortest length has nothing shorter to gain over";
  EXPECT_FALSE(ContextLengthScorer::applies(16, 16));
  EXPECT_TRUE(ContextLengthScorer::applies(32, 16));
}

}  // namespace
}  // namespace mt
