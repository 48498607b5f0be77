// ladder_results_test.cpp — the RESULTS file (src/ladder/results.h): JSONL and
// CSV give the same runs, missing counts are derived (tokens from flops, total
// from params), and every kind of bad input is a Status naming FILE:LINE and
// the field, never an abort.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "ladder/results.h"

namespace mt::ladder {
namespace {

using ::testing::HasSubstr;

TEST(LadderResults, JsonlFieldsAndDefaults) {
  const std::string text =
      "{\"name\": \"dense\", \"params\": 1.2e6, \"tokens\": 3e7, \"loss\": 3.21}\n"
      "\n"
      "{\"active_params\": 1e6, \"total_params\": 8e6, \"n_experts\": 8, \"flops\": 6e13, \"loss\": 3.0,"
      " \"accuracy\": {\"hellaswag\": 0.4}, \"budget\": \"c1\", \"meta\": {\"lr\": 3e-4}}\n"
      "{\"params\": 8e6, \"active_params\": 1e6, \"tokens\": 1e7, \"flops\": 7e13, \"loss\": 2.9, \"budget\": 1e19}\n";
  auto runs = parse_results_jsonl(text, "r.jsonl");
  ASSERT_TRUE(runs) << runs.status().message();
  ASSERT_EQ(runs->size(), 3u);
  const ladder::Run& a = (*runs)[0];
  EXPECT_EQ(a.name, "dense");
  EXPECT_EQ(a.where, "r.jsonl:1");
  EXPECT_EQ(a.active_params, 1.2e6);
  EXPECT_EQ(a.total_params, 1.2e6);
  EXPECT_DOUBLE_EQ(a.flops, 6 * 1.2e6 * 3e7);  // C = 6 N D when not given
  EXPECT_EQ(a.n_experts, 0);
  EXPECT_TRUE(a.budget.empty());
  const ladder::Run& b = (*runs)[1];
  EXPECT_EQ(b.name, "line 3");  // blank lines keep the numbering
  EXPECT_EQ(b.where, "r.jsonl:3");
  EXPECT_EQ(b.total_params, 8e6);
  EXPECT_EQ(b.n_experts, 8);
  EXPECT_DOUBLE_EQ(b.tokens, 6e13 / (6 * 1e6));  // D = C / (6 N_active) when not given
  EXPECT_EQ(b.accuracy.at("hellaswag"), 0.4);
  EXPECT_EQ(b.budget, "c1");
  const ladder::Run& c = (*runs)[2];
  EXPECT_EQ(c.active_params, 1e6);  // params is the total when active_params is given
  EXPECT_EQ(c.total_params, 8e6);
  EXPECT_EQ(c.flops, 7e13);  // given flops are kept as measured
  EXPECT_EQ(c.budget, "1e+19");
}

TEST(LadderResults, CsvMatchesJsonlAndReadsTheChinchillaColumns) {
  const std::string csv =
      "x,name,Model Size,Training FLOP,loss,budget,accuracy.arc\n"
      "1,a,\"1e6\",6e13,3.5,c1,0.3\n"
      "2,\"b, quoted\",2e6,6e13,3.4,,\n";
  auto runs = parse_results_csv(csv, "r.csv");
  ASSERT_TRUE(runs) << runs.status().message();
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].name, "a");
  EXPECT_EQ((*runs)[0].active_params, 1e6);
  EXPECT_DOUBLE_EQ((*runs)[0].tokens, 1e7);
  EXPECT_EQ((*runs)[0].budget, "c1");
  EXPECT_EQ((*runs)[0].accuracy.at("arc"), 0.3);
  EXPECT_EQ((*runs)[1].name, "b, quoted");
  EXPECT_TRUE((*runs)[1].accuracy.empty());  // an empty cell is an absent field
  EXPECT_EQ((*runs)[1].where, "r.csv:3");

  auto same = parse_results_jsonl(
      "{\"name\": \"a\", \"params\": 1e6, \"flops\": 6e13, \"loss\": 3.5, \"budget\": \"c1\","
      " \"accuracy\": {\"arc\": 0.3}}\n",
      "r.jsonl");
  ASSERT_TRUE(same);
  EXPECT_EQ((*same)[0].tokens, (*runs)[0].tokens);
  EXPECT_EQ((*same)[0].flops, (*runs)[0].flops);
}

struct BadCase {
  const char* what;
  const char* text;
  const char* expected;  // substring of the message
};

TEST(LadderResults, BadJsonlNamesFileLineAndField) {
  const std::string ok = "{\"params\": 1e6, \"tokens\": 1e7, \"loss\": 3}\n";
  const BadCase cases[] = {
      {"negative", "{\"params\": 1e6, \"tokens\": 1e7, \"loss\": -1}", "r.jsonl:2: field 'loss': expected a positive"},
      {"zero", "{\"params\": 0, \"tokens\": 1e7, \"loss\": 3}", "r.jsonl:2: field 'params': expected a positive"},
      {"missing loss", "{\"params\": 1e6, \"tokens\": 1e7}", "r.jsonl:2: missing field 'loss'"},
      {"missing N", "{\"tokens\": 1e7, \"loss\": 3}", "r.jsonl:2: missing field 'params'"},
      {"missing D", "{\"params\": 1e6, \"loss\": 3}", "r.jsonl:2: missing field 'tokens'"},
      {"unparsable", "{\"params\": 1e6, \"tokens\": 1e7, \"loss\": 3", "r.jsonl:2: not a JSON object"},
      {"not an object", "[1, 2]", "r.jsonl:2: expected a JSON object"},
      {"typo", "{\"params\": 1e6, \"tokns\": 1e7, \"loss\": 3}",
       "r.jsonl:2: unknown field 'tokns' (did you mean 'tokens'?)"},
      {"string number", "{\"params\": \"1e6\", \"tokens\": 1e7, \"loss\": 3}",
       "r.jsonl:2: field 'params': expected a number"},
      {"total < active", "{\"active_params\": 2e6, \"total_params\": 1e6, \"tokens\": 1e7, \"loss\": 3}",
       "r.jsonl:2: field 'total_params'"},
      {"fractional experts", "{\"params\": 1e6, \"n_experts\": 2.5, \"tokens\": 1e7, \"loss\": 3}",
       "r.jsonl:2: field 'n_experts': expected a whole number"},
      {"accuracy range", "{\"params\": 1e6, \"tokens\": 1e7, \"loss\": 3, \"accuracy\": {\"arc\": 1.5}}",
       "r.jsonl:2: field 'accuracy.arc'"},
      {"accuracy type", "{\"params\": 1e6, \"tokens\": 1e7, \"loss\": 3, \"accuracy\": 0.5}",
       "r.jsonl:2: field 'accuracy': expected an object"},
      {"budget type", "{\"params\": 1e6, \"tokens\": 1e7, \"loss\": 3, \"budget\": [1]}", "r.jsonl:2: field 'budget'"},
      // Issue 44, item 7: these aborted the bootstrap (1e308) or fitted B = inf (1e-300).
      {"absurd loss", "{\"params\": 1e6, \"tokens\": 1e7, \"loss\": 1e308}",
       "r.jsonl:2: field 'loss': 1e+308 is not a held-out cross-entropy"},
      {"tiny loss", "{\"params\": 1e6, \"tokens\": 1e7, \"loss\": 1e-300}",
       "r.jsonl:2: field 'loss': 1e-300 is not a held-out cross-entropy"},
  };
  for (const BadCase& c : cases) {
    auto r = parse_results_jsonl(ok + c.text + "\n", "r.jsonl");
    ASSERT_FALSE(r) << c.what;
    EXPECT_THAT(r.status().message(), HasSubstr(c.expected)) << c.what;
  }
  auto empty = parse_results_jsonl("\n\n", "r.jsonl");
  ASSERT_FALSE(empty);
  EXPECT_THAT(empty.status().message(), HasSubstr("r.jsonl: no runs"));
}

TEST(LadderResults, BadCsvNamesFileLineAndField) {
  const std::string header = "params,tokens,loss\n1e6,1e7,3\n";
  const BadCase cases[] = {
      {"not a number", "1e6,1e7,abc", "r.csv:3: field 'loss': expected a number, got 'abc'"},
      {"trailing junk", "1e6x,1e7,3", "r.csv:3: field 'params': expected a number, got '1e6x'"},
      {"negative", "1e6,-1e7,3", "r.csv:3: field 'tokens': expected a positive"},
      {"cell count", "1e6,1e7", "r.csv:3: 2 cells, but the header has 3 columns"},
      {"missing", "1e6,,3", "r.csv:3: missing field 'tokens' (or 'flops')"},
      {"quote", "1e6,\"1e7,3", "r.csv:3: unterminated quoted CSV field"},
  };
  for (const BadCase& c : cases) {
    auto r = parse_results_csv(header + c.text + "\n", "r.csv");
    ASSERT_FALSE(r) << c.what;
    EXPECT_THAT(r.status().message(), HasSubstr(c.expected)) << c.what;
  }
  auto no_loss = parse_results_csv("params,tokens\n1e6,1e7\n", "r.csv");
  ASSERT_FALSE(no_loss);
  EXPECT_THAT(no_loss.status().message(), HasSubstr("r.csv:2: missing field 'loss'"));
  auto both = parse_results_csv("params,Model Size,tokens,loss\n1e6,1e6,1e7,3\n", "r.csv");
  ASSERT_FALSE(both);
  EXPECT_THAT(both.status().message(), HasSubstr("r.csv:2: field 'params' is given by two columns"));
}

TEST(LadderResults, LoadPicksTheParserByExtension) {
  const std::string dir = ::testing::TempDir();
  const std::string csv = dir + "/ladder_results_test.CSV", jsonl = dir + "/ladder_results_test.jsonl";
  std::ofstream(csv) << "params,tokens,loss\n1e6,1e7,3\n";
  std::ofstream(jsonl) << "{\"params\": 1e6, \"tokens\": 1e7, \"loss\": 3}\n";
  auto a = load_results(csv), b = load_results(jsonl);
  ASSERT_TRUE(a) << a.status().message();
  ASSERT_TRUE(b) << b.status().message();
  EXPECT_EQ((*a)[0].tokens, (*b)[0].tokens);
  auto missing = load_results(dir + "/no_such_results.jsonl");
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.status().message(), HasSubstr("no_such_results.jsonl: cannot open results file"));
  std::remove(csv.c_str());
  std::remove(jsonl.c_str());
}

}  // namespace
}  // namespace mt::ladder
