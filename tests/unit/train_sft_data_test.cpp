// train_sft_data_test.cpp — supervised examples from JSONL (train/sft_data.h):
// prompt/completion, conversations and task items become the spans they
// should, trained where they should be, tokenized span by span; malformed
// lines name FILE:LINE and the field.
#include <gtest/gtest.h>

#include <string>

#include "train/sft_data.h"

namespace mt {
namespace {

std::unique_ptr<TextCodec> bytes() { return std::move(TextCodec::open("").value()); }

std::string text_of(const TextCodec& c, const SftSpan& s) { return c.decode(s.ids.data(), int64_t(s.ids.size())); }

TEST(SftData, TheThreeShapesBecomeTheirSpans) {
  auto codec = bytes();
  const std::string file =
      R"({"prompt": "Q: 2+2=? A:", "completion": " 4"})"
      "\n"
      R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},)"
      R"( {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Bye"},)"
      R"( {"role": "assistant", "content": "Bye."}]})"
      "\n"
      R"({"id": "add-1", "family": "add", "prompt": "Q: 3+4=? A:", "answer": " 7"})"
      "\n";
  auto ex = parse_sft_examples("f.jsonl", file, *codec);
  ASSERT_TRUE(ex.is_ok()) << ex.status().message();
  ASSERT_EQ(ex->size(), 3u);
  const auto& a = (*ex)[0].spans;
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(text_of(*codec, a[0]), "Q: 2+2=? A:");
  EXPECT_FALSE(a[0].trained);
  EXPECT_EQ(text_of(*codec, a[1]), " 4");
  EXPECT_TRUE(a[1].trained);
  std::string trained, all;
  for (const SftSpan& s : (*ex)[1].spans) {
    all += text_of(*codec, s);
    if (s.trained) trained += text_of(*codec, s);
  }
  EXPECT_EQ(all, "System: Be brief.\nUser: Hi\nAssistant: Hello.\nUser: Bye\nAssistant: Bye.\n");
  EXPECT_EQ(trained, " Hello.\n Bye.\n");
  const auto& c = (*ex)[2].spans;
  EXPECT_EQ(text_of(*codec, c[1]), " 7\n") << "a task item's answer ends with the newline its documents have";
  EXPECT_TRUE(c[1].trained);
}

TEST(SftData, MalformedLinesNameFileLineAndField) {
  auto codec = bytes();
  const auto err = [&](const std::string& text) {
    auto r = parse_sft_examples("f.jsonl", text, *codec);
    return r.is_ok() ? std::string("accepted") : r.status().message();
  };
  EXPECT_NE(err("{\"prompt\": \"a\", \"completion\": \"b\"}\n{\"prompt\": \"a\"}\n").find("f.jsonl:2: \"completion\""),
            std::string::npos);
  EXPECT_NE(err(R"({"messages": [{"role": "user", "content": "hi"}]})").find("f.jsonl:1: \"messages\": no assistant"),
            std::string::npos);
  EXPECT_NE(err(R"({"messages": [{"role": "robot", "content": "hi"}]})").find("\"role\": \"robot\""),
            std::string::npos);
  EXPECT_NE(err(R"({"messages": [{"content": "hi"}]})").find("\"messages\"[0].\"role\""), std::string::npos);
  EXPECT_NE(err(R"({"text": "hi"})").find("f.jsonl:1: expected \"prompt\""), std::string::npos);
  EXPECT_NE(err("{\"prompt\": \"a\", \"completion\": \"b\"}\nnot json\n").find("f.jsonl:2"), std::string::npos);
}

}  // namespace
}  // namespace mt
