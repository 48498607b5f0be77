// train_environment_test.cpp — agentic episodes' environments
// (train/environment.h): the calculator's arithmetic (precedence,
// parentheses, truncating division, what it refuses), the key-value world's
// tools and goal, and the text helpers that find a call and the final answer.
#include <gtest/gtest.h>

#include "train/environment.h"

namespace mt {
namespace {

TEST(Calculator, EvaluatesIntegerExpressionsAndRefusesTheRest) {
  EXPECT_EQ(evaluate_expression("347*829"), 287663);
  EXPECT_EQ(evaluate_expression("2+3*4"), 14);
  EXPECT_EQ(evaluate_expression("(2+3)*4"), 20);
  EXPECT_EQ(evaluate_expression(" 7 / 2 "), 3);
  EXPECT_EQ(evaluate_expression("-7/2"), -3);
  EXPECT_EQ(evaluate_expression("10-4-3"), 3) << "left to right";
  EXPECT_EQ(evaluate_expression("--5"), 5);
  for (const char* bad : {"", "2+", "(1", "1)", "4/0", "2 3", "x", "9223372036854775807+1", "99999999999*99999999999"})
    EXPECT_FALSE(evaluate_expression(bad).has_value()) << bad;
  auto calc = make_environment("calculator", "", "");
  ASSERT_TRUE(calc.is_ok());
  EXPECT_EQ((*calc)->call("12*12"), "144");
  EXPECT_EQ((*calc)->call("12*"), "error");
  EXPECT_TRUE((*calc)->goal_met());
}

TEST(KeyValueWorld, GetsSetsAndJudgesItsGoal) {
  auto kv = make_environment("kv", "k1=5 k2=9", "k2=16");
  ASSERT_TRUE(kv.is_ok()) << kv.status().message();
  Environment& e = **kv;
  EXPECT_EQ(e.call("get k2"), "9");
  EXPECT_EQ(e.call("get k7"), "missing");
  EXPECT_FALSE(e.goal_met());
  EXPECT_EQ(e.call("set k2 16"), "ok");
  EXPECT_EQ(e.call("get k2"), "16");
  EXPECT_TRUE(e.goal_met());
  EXPECT_EQ(e.call("set k2"), "error");
  EXPECT_EQ(e.call("get k1 k2"), "error");
  EXPECT_EQ(e.call("delete k1"), "error");
  EXPECT_FALSE(make_environment("kv", "k1", "").is_ok());
  EXPECT_FALSE(make_environment("kv", "k1=2", "=3").is_ok());
  const auto unknown = make_environment("shell", "", "");
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_NE(unknown.status().message().find("\"env\""), std::string::npos);
}

TEST(ToolText, FindsTheCallTheTextEndsWithAndTheFinalAnswer) {
  EXPECT_EQ(pending_call("A: <tool>2*3</tool>"), "2*3");
  EXPECT_FALSE(pending_call("A: <tool>2*3</tool> 6").has_value());
  EXPECT_FALSE(pending_call("A: </tool>").has_value());
  EXPECT_EQ(pending_call("<tool>a</tool><result>1</result><tool>get k1</tool>"), "get k1");
  EXPECT_EQ(final_answer(" <tool>2*3</tool><result>6</result> 6\n"), " 6\n");
  EXPECT_EQ(final_answer(" 6"), " 6");
  EXPECT_EQ(count_calls("<tool>a</tool><result>1</result><tool>b</tool>"), 2);
  EXPECT_EQ(count_calls(" 6"), 0);
}

}  // namespace
}  // namespace mt
