// train_episodes_test.cpp — multi-turn generation with tool calls
// (train/episodes.h) on a model built to be a deterministic successor
// machine: zero layers' weights leave the residual stream to the embedding,
// and each token's embedding points the untied head at the token that must
// follow it. Greedy decoding then writes "<tool>3+4</tool>"; the calculator
// answers "<result>7</result>" (flagged no-loss, fed to the decoder); the
// model then says "7" and stops. Without an environment nothing is
// injected, and past max_calls the episode ends at the call.
#include <gtest/gtest.h>

#include <fstream>

#include "core/token_flags.h"
#include "data/tokenizer.h"
#include "model/weights.h"
#include "support/e2e.h"
#include "train/episodes.h"

namespace mt {
namespace {

class Episodes : public ::testing::Test {
 protected:
  void SetUp() override {
    // A tokenizer whose pieces include the tool syntax (kept whole) and the digits.
    std::string text;
    for (int i = 0; i < 200; ++i) text += "Q: 3+4=? A: <tool>3+4</tool><result>7</result> 7\n";
    const std::vector<std::string_view> texts = {text};
    TokenizerTrainOptions to;
    to.vocab_size = 280;
    auto model = Tokenizer::train(texts, to);
    ASSERT_TRUE(model.is_ok()) << model.status().message();
    path_ = tmp_.path() + "/t.model";
    std::ofstream(path_, std::ios::binary) << model.value();
    auto codec = TextCodec::open(path_);
    ASSERT_TRUE(codec.is_ok()) << codec.status().message();
    codec_ = std::move(*codec);
    auto one = [&](const std::string& s) {
      const std::vector<int32_t> ids = codec_->encode(s);
      EXPECT_EQ(ids.size(), 1u) << "\"" << s << "\" is not one piece";
      return ids.empty() ? 0 : ids[0];
    };
    q_ = one("Q");
    tool_ = one("<tool>"), tool_end_ = one("</tool>"), result_ = one("<result>"), result_end_ = one("</result>");
    three_ = one("3"), plus_ = one("+"), four_ = one("4"), seven_ = one("7");
    sep_ = codec_->end_of_document();

    c_.vocab_size = 288;
    c_.d_model = 16;
    c_.n_layers = 1;
    c_.n_heads = 2;
    c_.n_kv_heads = 1;
    c_.layer_pattern = "G";
    c_.d_ff = 16;
    c_.tied_embeddings = false;
    ParamLayout layout;
    off_ = build_layout(c_, layout);
    params_.assign(size_t(layout.total()), 0.0f);
    for (const auto& e : layout.entries())
      if (e.kind == ParamKind::kNorm) std::fill(params_.begin() + e.offset, params_.begin() + e.offset + e.numel, 1.0f);
    // Token `from` is followed by token `to`: both meet in dimension d.
    int64_t d = 0;
    auto follow = [&](int32_t from, int32_t to) {
      params_[size_t(off_.embed + int64_t(from) * c_.d_model + d)] = 1.0f;
      params_[size_t(off_.head + int64_t(to) * c_.d_model + d)] = 100.0f;
      ++d;
    };
    follow(q_, tool_);
    follow(tool_, three_);
    follow(three_, plus_);
    follow(plus_, four_);
    follow(four_, tool_end_);
    follow(result_end_, seven_);
    follow(seven_, sep_);
  }
  std::vector<Episode> run(Environment* env, int64_t max_calls) {
    DecoderOptions dopt;
    dopt.batch = 1;
    dopt.max_len = 32;
    Decoder dec(c_, params_.data(), nullptr, dopt);
    const std::vector<int32_t> ctx = {sep_, q_};
    EpisodeOptions o;
    o.max_new_tokens = 20;
    o.stop_token = sep_;
    o.max_calls = max_calls;
    o.sampling.temperature = 0.0;
    return run_episodes(dec, *codec_, {&ctx}, {env}, {0}, o);
  }
  e2e::TempDir tmp_;
  std::string path_;
  std::unique_ptr<TextCodec> codec_;
  int32_t q_ = 0, tool_ = 0, tool_end_ = 0, result_ = 0, result_end_ = 0, three_ = 0, plus_ = 0, four_ = 0, seven_ = 0,
          sep_ = 0;
  ModelConfig c_;
  ModelOffsets off_;
  std::vector<float> params_;
};

TEST_F(Episodes, TheEnvironmentAnswersACallAndItsTokensCarryNoLoss) {
  auto calc = make_environment("calculator", "", "");
  ASSERT_TRUE(calc.is_ok());
  const auto e = run(calc->get(), 4);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].calls, 1);
  const std::vector<int32_t> answer = codec_->encode("<result>7</result>");
  std::vector<int32_t> want = {tool_, three_, plus_, four_, tool_end_};
  for (int32_t t : answer) want.push_back(without_loss(t));
  want.insert(want.end(), {seven_, sep_});
  EXPECT_EQ(e[0].tokens, want);
  std::vector<int32_t> plain;
  for (int32_t t : e[0].tokens) plain.push_back(token_id(t));
  EXPECT_EQ(codec_->decode(plain.data(), int64_t(plain.size()) - 1), "<tool>3+4</tool><result>7</result>7");
}

TEST_F(Episodes, NoEnvironmentNoInjectionAndACallPastTheLimitEndsTheEpisode) {
  const auto plain = run(nullptr, 4);
  EXPECT_EQ(plain[0].calls, 0);
  for (int32_t t : plain[0].tokens) EXPECT_EQ(t & kNoLossBit, 0);
  EXPECT_EQ(plain[0].tokens.size(), 20u) << "past the call the machine has no successor: it runs to the budget";
  auto calc = make_environment("calculator", "", "");
  const auto capped = run(calc->get(), 0);
  EXPECT_EQ(capped[0].calls, 0);
  const std::vector<int32_t> want = {tool_, three_, plus_, four_, tool_end_};
  EXPECT_EQ(capped[0].tokens, want);
}

// The verdict on an episode's text: the item's check on the answer after
// the last tool result, and the environment's goal replayed over its calls.
TEST(JudgeEpisode, NeedsTheAnswerAndTheGoal) {
  const GenItem kv{.id = "kv-1",
                   .family = "kv",
                   .prompt = "Q: add 4 to k1, then say k1 A:",
                   .answer = " 932",
                   .env = "kv",
                   .state = "k1=928 k2=817",
                   .goal = "k1=932"};
  const EpisodeVerdict done =
      judge_episode(kv, "<tool>get k1</tool><result>928</result><tool>set k1 932</tool><result>ok</result> 932");
  EXPECT_TRUE(done.correct);
  EXPECT_EQ(done.calls, 2);
  const EpisodeVerdict unset = judge_episode(kv, "<tool>get k1</tool><result>928</result> 932");
  EXPECT_FALSE(unset.correct) << "the right answer, but the world was never changed";
  EXPECT_TRUE(unset.answer.correct);
  const EpisodeVerdict wrong = judge_episode(kv, "<tool>set k1 932</tool><result>ok</result> 931");
  EXPECT_FALSE(wrong.correct) << "the goal met, the answer wrong";
  // `eval --tasks` scores agentic items the same way, beside plain ones.
  const GenItem plain{.id = "copy-1", .family = "copy", .prompt = "Q: copy 1 2 A:", .answer = " 1 2"};
  const GenResult r =
      tally_gen("mixed", {kv, kv, plain}, {"<tool>set k1 932</tool><result>ok</result> 932", " 932", " 1 2"});
  EXPECT_EQ(r.correct, (std::vector<char>{1, 0, 1}));
}

}  // namespace
}  // namespace mt
