// train_text_set_test.cpp — a text set (train/text_set.h) predicts every
// token after the first exactly once, whatever the stream's length and the
// window; scoring sums exactly the counted tokens' losses (a short last
// batch's filler rows are not counted) and their decoded bytes; reading one
// tokenizes each document followed by the end-of-document id, and refuses a
// missing file, a bad JSONL record (naming file and line) and a set shorter
// than one window.
#include "train/text_set.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

#include "support/data_fixtures.h"
#include "train/inference_model.h"

namespace mt {
namespace {

using testdata::TempDir;
using testdata::write_file;
using ::testing::HasSubstr;

TEST(TextSet, EveryTokenAfterTheFirstIsPredictedOnce) {
  for (int64_t T : {1, 2, 7, 16})
    for (int64_t L = T + 1; L < T * 5 + 3; ++L) {
      const std::vector<SetWindow> w = set_windows(L, T);
      std::vector<int> predicted(size_t(L), 0);
      for (const SetWindow& x : w) {
        ASSERT_GE(x.start, 0);
        ASSERT_LE(x.start + T + 1, L) << "a window past the stream";
        for (int64_t t = x.first_counted; t < T; ++t) ++predicted[size_t(x.start + 1 + t)];
      }
      EXPECT_EQ(predicted[0], 0);
      for (int64_t i = 1; i < L; ++i) EXPECT_EQ(predicted[size_t(i)], 1) << "T " << T << " L " << L << " i " << i;
      EXPECT_EQ(int64_t(w.size()), (L - 1 + T - 1) / T) << "T " << T << " L " << L;
    }
  EXPECT_TRUE(set_windows(4, 4).empty());  // shorter than a window
}

TEST(TextSet, ScoresExactlyTheCountedTokens) {
  auto codec = TextCodec::open("");  // bytes: a token decodes to one byte (the separator to none)
  ASSERT_TRUE(codec) << codec.status().message();
  TextSet set;
  for (int32_t i = 0; i < 53; ++i) set.tokens.push_back(int32_t('a') + i % 26);
  for (int64_t batch : {1, 3, 4}) {
    const int64_t T = 8;
    std::vector<float> losses;
    int64_t calls = 0;
    // The loss of predicting token x is x itself: the mean over the counted
    // tokens is then the mean of stream[1..].
    const SetScore sc =
        score_text_set(set, batch, T, *codec.value(), [&](const int32_t* rows) -> const std::vector<float>& {
          ++calls;
          losses.assign(size_t(batch * T), 0.0f);
          for (int64_t b = 0; b < batch; ++b)
            for (int64_t t = 0; t < T; ++t) losses[size_t(b * T + t)] = float(rows[b * (T + 1) + 1 + t]);
          return losses;
        });
    const double want = std::accumulate(set.tokens.begin() + 1, set.tokens.end(), 0.0) / 52.0;
    EXPECT_NEAR(sc.loss, want, 1e-9) << "batch " << batch;
    EXPECT_EQ(sc.tokens, 52);
    EXPECT_EQ(sc.bytes, 52);
    EXPECT_EQ(sc.windows, 7);  // 6 full windows of 8 predictions, and the last 4 tokens
    EXPECT_EQ(calls, (7 + batch - 1) / batch);
    EXPECT_NEAR(sc.bits_per_byte(), want / std::log(2.0), 1e-9);
  }
}

TEST(TextSet, ReadsDocumentsEachFollowedByTheSeparator) {
  TempDir d;
  auto codec = TextCodec::open("");
  ASSERT_TRUE(codec) << codec.status().message();
  write_file(d / "held.out.jsonl", "{\"text\": \"abc\"}\n{\"text\": \"de\"}\n");
  auto s = read_text_set(d / "held.out.jsonl", *codec.value(), 4);
  ASSERT_TRUE(s) << s.status().message();
  EXPECT_EQ(s->name, "held");
  EXPECT_EQ(s->documents, 2);
  const int32_t eod = codec.value()->end_of_document();
  std::vector<int32_t> want = codec.value()->encode("abc");
  want.push_back(eod);
  for (int32_t t : codec.value()->encode("de")) want.push_back(t);
  want.push_back(eod);
  EXPECT_EQ(s->tokens, want);
  // A plain-text file is one document.
  write_file(d / "one.txt", "plain text");
  auto t = read_text_set(d / "one.txt", *codec.value(), 4);
  ASSERT_TRUE(t) << t.status().message();
  EXPECT_EQ(t->documents, 1);
  EXPECT_EQ(t->name, "one");

  EXPECT_THAT(read_text_set(d / "gone.jsonl", *codec.value(), 4).status().message(), HasSubstr("no such text set"));
  EXPECT_THAT(read_text_set(d / "held.out.jsonl", *codec.value(), 64).status().message(),
              HasSubstr("fewer than one window of seq_len + 1 = 65"));
  write_file(d / "bad.jsonl", "{\"text\": \"abc\"}\n{\"text\": 3}\n");
  EXPECT_THAT(read_text_set(d / "bad.jsonl", *codec.value(), 2).status().message(), HasSubstr("bad.jsonl:2"));
}

}  // namespace
}  // namespace mt
