// train_verifier_test.cpp — the answer checks (train/verifier.h): each kind
// accepts what it should and refuses a near miss; the first line is the
// answer; ill-formed answers are flagged apart from wrong ones; families
// map to their checks; a task file's "check" overrides the family's and a
// bad one names the line.
#include <gtest/gtest.h>

#include <string>

#include "train/gen_tasks.h"
#include "train/verifier.h"

namespace mt {
namespace {

TEST(Verifier, IntegerComparesValuesOfTheWholeAnswerLine) {
  EXPECT_TRUE(verify(CheckKind::kInteger, " 1399", " 1399").correct);
  EXPECT_TRUE(verify(CheckKind::kInteger, " 1399", "1399\nQ: 3+4=? A: 7").correct);  // the first line only
  EXPECT_TRUE(verify(CheckKind::kInteger, " 42", " +0042 ").correct);
  EXPECT_TRUE(verify(CheckKind::kInteger, " -7", " -7").correct);
  EXPECT_FALSE(verify(CheckKind::kInteger, " 1399", " 1398").correct);
  const Verdict words = verify(CheckKind::kInteger, " 42", " 42 apples");
  EXPECT_FALSE(words.correct);
  EXPECT_FALSE(words.well_formed);
  EXPECT_EQ(words.extracted, "42 apples");
  const Verdict wrong = verify(CheckKind::kInteger, " 42", " 41");
  EXPECT_FALSE(wrong.correct);
  EXPECT_TRUE(wrong.well_formed);
  EXPECT_FALSE(verify(CheckKind::kInteger, " 42", "").well_formed);
  EXPECT_FALSE(verify(CheckKind::kInteger, " 42", "99999999999999999999").well_formed);  // past int64
}

TEST(Verifier, ListComparesTokensInOrder) {
  EXPECT_TRUE(verify(CheckKind::kList, " a d k z", " a d k z").correct);
  EXPECT_TRUE(verify(CheckKind::kList, " a d k z", "a  d\tk z \n").correct);
  EXPECT_FALSE(verify(CheckKind::kList, " a d k z", " a d z k").correct);
  EXPECT_FALSE(verify(CheckKind::kList, " a d k z", " a d k").correct);
  EXPECT_FALSE(verify(CheckKind::kList, " a d k z", "   ").well_formed);
}

TEST(Verifier, TextTrimsButKeepsCaseAndInnerSpaces) {
  EXPECT_TRUE(verify(CheckKind::kText, " KDAZ", "KDAZ\n").correct);
  EXPECT_FALSE(verify(CheckKind::kText, " KDAZ", " kdaz").correct);
  EXPECT_FALSE(verify(CheckKind::kText, " KD AZ", " KDAZ").correct);
}

TEST(Verifier, ExactIsByteForByte) {
  EXPECT_TRUE(verify(CheckKind::kExact, " 48213", " 48213").correct);
  EXPECT_FALSE(verify(CheckKind::kExact, " 48213", "48213").correct);
  EXPECT_FALSE(verify(CheckKind::kExact, " 48213", " 48213\n").correct);
}

TEST(Verifier, FamiliesHaveTheirChecksAndNamesRoundTrip) {
  EXPECT_EQ(default_check("add"), CheckKind::kInteger);
  EXPECT_EQ(default_check("multistep"), CheckKind::kInteger);
  EXPECT_EQ(default_check("sort"), CheckKind::kList);
  EXPECT_EQ(default_check("strings"), CheckKind::kText);
  EXPECT_EQ(default_check("passkey"), CheckKind::kExact);
  EXPECT_EQ(default_check("somebody-elses"), CheckKind::kExact);
  for (CheckKind k : {CheckKind::kExact, CheckKind::kInteger, CheckKind::kList, CheckKind::kText})
    EXPECT_EQ(parse_check(check_name(k)).value(), k);
  EXPECT_FALSE(parse_check("fuzzy").is_ok());
}

TEST(Verifier, TaskFileCheckOverridesTheFamilyAndIsValidated) {
  auto items =
      parse_gen_tasks("t.jsonl", R"({"id":"a","family":"mine","prompt":"Q: 2+2=? A:","answer":" 4","check":"integer"})"
                                 "\n"
                                 R"({"id":"b","family":"add","prompt":"Q: 2+3=? A:","answer":" 5"})"
                                 "\n");
  ASSERT_TRUE(items.is_ok()) << items.status().message();
  EXPECT_EQ(check_of(items.value()[0]), CheckKind::kInteger);
  EXPECT_EQ(check_of(items.value()[1]), CheckKind::kInteger);
  EXPECT_NE(gen_item_line(items.value()[0]).find("\"check\":\"integer\""), std::string::npos);
  // Scored by the check: " 04" is 4 for an integer item, not for an exact one.
  const GenResult r = tally_gen("t", items.value(), {" 04", "5"});
  EXPECT_EQ(r.all.hits, 2);
  auto bad = parse_gen_tasks("t.jsonl", R"({"id":"a","family":"x","prompt":"p","answer":"a","check":"fuzzy"})");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("t.jsonl:1: \"check\""), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace mt
