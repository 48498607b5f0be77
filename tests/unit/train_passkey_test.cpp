// train_passkey_test.cpp — the passkey generator (train/passkey.h) and its
// filler (data/filler_sentences.h): the same options give the same items and
// another seed others; prompts are as long as asked within a sentence and the
// needle sits at the depth asked within a sentence, counted in the tokens of
// the byte tokenizer and of a SentencePiece model; train and held-out items
// never share a key, whatever the seeds; items cycle through depths and
// lengths; bad options name the option.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "data/filler_sentences.h"
#include "data/tokenizer.h"
#include "support/prose.h"
#include "support/temp_dir.h"
#include "train/passkey.h"

namespace mt {
namespace {

FillerSentences pool(int paragraphs = 80, uint64_t seed = 3) {
  FillerSentences f;
  add_sentences(testing::prose(paragraphs, seed), FillerOptions{}, f.sentences);
  return f;
}

std::unique_ptr<TextCodec> bytes() { return std::move(TextCodec::open("").value()); }

// A SentencePiece model trained on the same kind of prose, written into `dir`.
std::string sp_model(const testing::TempDir& dir) {
  const std::string text = testing::prose(400, 11);
  TokenizerTrainOptions opt;
  opt.vocab_size = 600;
  auto m = Tokenizer::train({std::string_view(text)}, opt);
  EXPECT_TRUE(m.is_ok()) << m.status().message();
  const std::string path = dir.path() + "/sp.model";
  std::ofstream(path, std::ios::binary) << (m.is_ok() ? m.value() : std::string());
  return path;
}

// The most tokens one filler sentence adds to a prompt: the tolerance of lengths and depths.
int64_t longest_sentence(const FillerSentences& f, const TextCodec& codec) {
  int64_t most = 0;
  for (const std::string& s : f.sentences)
    most = std::max<int64_t>(most, int64_t(codec.encode("x " + s).size() - codec.encode("x").size()));
  return most;
}

PasskeyOptions options() {
  PasskeyOptions o;
  o.n = 60;
  o.seed = 7;
  o.tokens = {256, 512, 1024};
  o.split = TaskSplit::kHeldOut;
  return o;
}

TEST(Passkey, SameOptionsSameItemsAndAnotherSeedOthers) {
  const FillerSentences f = pool();
  auto codec = bytes();
  auto a = make_passkey_items(options(), f, *codec), b = make_passkey_items(options(), f, *codec);
  PasskeyOptions o = options();
  o.seed = 8;
  auto c = make_passkey_items(o, f, *codec);
  ASSERT_TRUE(a.is_ok() && b.is_ok() && c.is_ok()) << a.status().message();
  ASSERT_EQ(a.value().size(), 60u);
  int64_t same_prompt = 0, same_key = 0;
  for (size_t i = 0; i < a.value().size(); ++i) {
    EXPECT_EQ(gen_item_line(a.value()[i]), gen_item_line(b.value()[i])) << i;
    same_prompt += a.value()[i].prompt == c.value()[i].prompt ? 1 : 0;
    same_key += a.value()[i].answer == c.value()[i].answer ? 1 : 0;
  }
  EXPECT_EQ(same_prompt, 0);
  EXPECT_LE(same_key, 2);  // 18,000 held-out keys: a coincidence or two at most, by chance
}

// Lengths, depths and the needle where needle_token says, for one tokenizer.
void check_placement(const TextCodec& codec) {
  const FillerSentences f = pool();
  const int64_t tol = longest_sentence(f, codec);
  ASSERT_GT(tol, 0);
  PasskeyOptions o = options();
  o.n = 45;
  auto items = make_passkey_items(o, f, codec);
  ASSERT_TRUE(items.is_ok()) << items.status().message();
  for (const GenItem& it : items.value()) {
    SCOPED_TRACE(it.id);
    const std::vector<int32_t> ids = codec.encode(it.prompt);
    ASSERT_EQ(it.prompt_tokens, int64_t(ids.size()));
    EXPECT_LE(std::abs(it.prompt_tokens - it.tokens), tol) << "asked " << it.tokens;
    // The needle starts at needle_token (after the joining space, if any).
    const std::string key = it.answer.substr(1);
    const std::string needle = "The pass key is " + key + ". Remember it. " + key + " is the pass key.";
    std::string from = codec.decode(ids.data() + it.needle_token, int64_t(ids.size()) - it.needle_token);
    if (!from.empty() && from[0] == ' ') from.erase(0, 1);
    EXPECT_EQ(from.compare(0, needle.size(), needle), 0) << from.substr(0, 80);
    // Its depth: the share of the filler tokens before it, within one sentence of the filler.
    const int64_t fixed =
        int64_t(codec.encode("x " + needle).size() + codec.encode("x " + std::string(kPasskeyQuestion)).size() -
                2 * codec.encode("x").size());
    const int64_t filler = it.prompt_tokens - fixed;
    EXPECT_LE(std::abs(double(it.needle_token) - it.depth * double(filler)), double(tol) + 1.0)
        << "depth " << it.depth << " filler " << filler;
    // The question closes the prompt; the answer is the key after a space.
    EXPECT_EQ(it.prompt.substr(it.prompt.size() - std::string(kPasskeyQuestion).size()), kPasskeyQuestion);
    EXPECT_EQ(it.answer, " " + key);
    EXPECT_EQ(key.size(), 5u);
  }
}

TEST(Passkey, LengthsAndDepthsWithinASentenceInBytes) { check_placement(*bytes()); }

TEST(Passkey, LengthsAndDepthsWithinASentenceInSentencePieceTokens) {
  testing::TempDir tmp;
  auto codec = TextCodec::open(sp_model(tmp));
  ASSERT_TRUE(codec.is_ok()) << codec.status().message();
  ASSERT_TRUE(codec.value()->is_sentencepiece());
  check_placement(*codec.value());
}

TEST(Passkey, ItemsCycleThroughDepthsThenLengths) {
  auto items = make_passkey_items(options(), pool(), *bytes());
  ASSERT_TRUE(items.is_ok());
  const std::vector<double> depths = {0.0, 0.25, 0.5, 0.75, 1.0};
  const std::vector<int64_t> lengths = {256, 512, 1024};
  std::map<std::pair<int64_t, double>, int> cells;
  for (size_t i = 0; i < items.value().size(); ++i) {
    const GenItem& it = items.value()[i];
    EXPECT_EQ(it.depth, depths[i % 5]);
    EXPECT_EQ(it.tokens, lengths[(i / 5) % 3]);
    EXPECT_EQ(it.family, "passkey");
    EXPECT_EQ(it.split, "held-out");
    ++cells[{it.tokens, it.depth}];
  }
  EXPECT_EQ(cells.size(), 15u);
  for (const auto& [cell, n] : cells) EXPECT_EQ(n, 4);  // 60 items over 15 cells
  // Depth 0 opens the prompt with the needle.
  EXPECT_EQ(items.value()[0].needle_token, 0);
  EXPECT_EQ(items.value()[0].prompt.rfind("The pass key is", 0), 0u);
}

TEST(Passkey, TrainAndHeldOutNeverShareAKey) {
  const FillerSentences f = pool();
  auto codec = bytes();
  std::set<std::string> train, held_out;
  int64_t same_opening = 0;  // item i of both splits opens with the same filler (depth > 0)
  for (uint64_t seed : {1, 2, 3}) {
    PasskeyOptions o;
    o.n = 400;
    o.seed = seed;
    o.tokens = {100};
    std::vector<std::string> openings;
    for (TaskSplit split : {TaskSplit::kTrain, TaskSplit::kHeldOut}) {
      o.split = split;
      auto items = make_passkey_items(o, f, *codec);
      ASSERT_TRUE(items.is_ok()) << items.status().message();
      for (size_t i = 0; i < items.value().size(); ++i) {
        const GenItem& it = items.value()[i];
        const int64_t key = std::stoll(it.answer.substr(1));
        EXPECT_EQ(passkey_is_held_out(key), split == TaskSplit::kHeldOut) << key;
        (split == TaskSplit::kTrain ? train : held_out).insert(it.answer);
        const std::string opening = it.prompt.substr(0, 24);
        if (split == TaskSplit::kTrain)
          openings.push_back(opening);
        else
          same_opening += it.depth > 0 && openings[i] == opening ? 1 : 0;
      }
    }
  }
  EXPECT_GT(train.size(), 1000u);
  EXPECT_GT(held_out.size(), 1000u);
  for (const std::string& k : held_out) EXPECT_EQ(train.count(k), 0u) << "shared key" << k;
  // The filler draws differ between the splits too (a chance coincidence or two in 960 items).
  EXPECT_LE(same_opening, 5);
  // One key in five is held-out, spread over the key space.
  int64_t held = 0;
  for (int64_t k = 10000; k < 100000; ++k) held += passkey_is_held_out(k) ? 1 : 0;
  EXPECT_NEAR(double(held) / 90000.0, 0.2, 0.01);
}

TEST(Passkey, DigitsSetTheKeyLength) {
  PasskeyOptions o = options();
  o.digits = 3;
  o.n = 20;
  auto items = make_passkey_items(o, pool(), *bytes());
  ASSERT_TRUE(items.is_ok());
  for (const GenItem& it : items.value()) {
    EXPECT_EQ(it.answer.size(), 4u) << it.answer;
    EXPECT_NE(it.answer[1], '0');
  }
}

// With `repeat` = K, an item's filler is K sentences of the pool in turn:
// its sentences repeat, in the same order every cycle, within the length
// rule; another K draws other cycles.
TEST(Passkey, RepeatCyclesThroughSentencesDrawnForTheItem) {
  const FillerSentences f = pool();
  auto codec = bytes();
  PasskeyOptions o = options();
  o.n = 12;
  o.tokens = {3000};  // bytes: some 30 sentences
  o.repeat = 3;
  auto items = make_passkey_items(o, f, *codec);
  ASSERT_TRUE(items.is_ok()) << items.status().message();
  const int64_t tol = longest_sentence(f, *codec);
  for (const GenItem& it : items.value()) {
    SCOPED_TRACE(it.id);
    EXPECT_LE(std::abs(it.prompt_tokens - it.tokens), tol);
    // The filler's sentences: every pool sentence the prompt holds, in order of appearance.
    std::vector<std::pair<size_t, size_t>> at;  // (byte offset, sentence index)
    for (size_t k = 0; k < f.sentences.size(); ++k)
      for (size_t p = it.prompt.find(f.sentences[k]); p != std::string::npos; p = it.prompt.find(f.sentences[k], p + 1))
        at.emplace_back(p, k);
    std::sort(at.begin(), at.end());
    std::set<size_t> distinct;
    for (const auto& [p, k] : at) distinct.insert(k);
    EXPECT_LE(distinct.size(), 3u);
    EXPECT_GT(at.size(), 3 * distinct.size()) << "a 3,000-byte prompt holds each of its sentences often";
    for (size_t j = distinct.size(); j < at.size(); ++j) EXPECT_EQ(at[j].second, at[j - distinct.size()].second) << j;
  }
  auto again = make_passkey_items(o, f, *codec);
  o.repeat = 0;
  auto plain = make_passkey_items(o, f, *codec);
  ASSERT_TRUE(again.is_ok() && plain.is_ok());
  for (size_t i = 0; i < items.value().size(); ++i) {
    EXPECT_EQ(gen_item_line(items.value()[i]), gen_item_line(again.value()[i]));
    EXPECT_NE(items.value()[i].prompt, plain.value()[i].prompt);
    EXPECT_EQ(items.value()[i].answer, plain.value()[i].answer);  // keys are drawn apart from the filler
  }
}

TEST(Passkey, BadOptionsNameTheOption) {
  const FillerSentences f = pool();
  auto codec = bytes();
  PasskeyOptions o = options();
  o.tokens = {256, 40};
  auto r = make_passkey_items(o, f, *codec);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message().rfind("tokens: a prompt of 40 tokens is shorter than the needle and question", 0), 0u)
      << r.status().message();
  o = options();
  o.depths = {0.5, 1.5};
  r = make_passkey_items(o, f, *codec);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message().rfind("depths: 1.5 is outside [0, 1]", 0), 0u) << r.status().message();
  o = options();
  o.digits = 12;
  EXPECT_EQ(make_passkey_items(o, f, *codec).status().message().rfind("digits:", 0), 0u);
  o = options();
  o.repeat = -1;
  EXPECT_EQ(make_passkey_items(o, f, *codec).status().message().rfind("repeat:", 0), 0u);
}

TEST(FillerSentences, SentencesOfParagraphs) {
  std::vector<std::string> out;
  add_sentences(
      "First line of a paragraph\nthat wraps here. Pi is 3.14 or so! Short one.\n\n"
      "  A new   paragraph\tstarts here? \"Quoted words end here.\" Then (a bracket ends here.)\n\n"
      "The passkey is 12345 in this one. Also the Pass Key sentence goes. Seven words that stay in the pool.\n"
      "Too many words here: one two three four five six seven eight nine ten eleven.\n\n"
      "## A heading without a full stop\n\nA list item that ends without one",
      FillerOptions{0, 3, 12}, out);
  const std::vector<std::string> want = {"First line of a paragraph that wraps here.",
                                         "Pi is 3.14 or so!",
                                         "A new paragraph starts here?",
                                         "\"Quoted words end here.\"",
                                         "Then (a bracket ends here.)",
                                         "Seven words that stay in the pool."};
  EXPECT_EQ(out, want);  // "Short one." (2 words), pass keys, 14 words and text without a sentence end are left out
}

TEST(FillerSentences, ReadsInputsAsDataBuildDoesAndSaysWhenThereIsNoProse) {
  testing::TempDir tmp;
  std::ofstream(tmp.path() + "/a.txt") << "One two three four. Five six seven eight.\n";
  std::ofstream(tmp.path() + "/b.jsonl") << "{\"text\": \"Nine ten eleven twelve.\"}\nnot json\n";
  auto f = read_filler({tmp.path()}, FillerOptions{});
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  EXPECT_EQ(f.value().sentences,
            (std::vector<std::string>{"One two three four.", "Five six seven eight.", "Nine ten eleven twelve."}));
  EXPECT_EQ(f.value().documents, 2);
  EXPECT_EQ(f.value().skipped_records, 1);
  std::ofstream(tmp.path() + "/code.txt") << "x\n";
  auto none = read_filler({tmp.path() + "/code.txt"}, FillerOptions{});
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.status().message().find("code.txt: no sentence of 3 to 64 words"), std::string::npos)
      << none.status().message();
  EXPECT_FALSE(read_filler({tmp.path() + "/nope"}, FillerOptions{}).is_ok());
}

}  // namespace
}  // namespace mt
