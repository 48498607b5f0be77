// data_mixture_test.cpp — mixture TOML reading: scales as fractions and
// numbers, defaults, and errors naming file, line and key.
#include "data/mixture.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "data/data_build.h"
#include "data/dataset.h"
#include "support/data_fixtures.h"

namespace mt {
namespace {

using ::testing::HasSubstr;
namespace td = testdata;

std::string error_of(const std::string& text) {
  auto m = parse_mixture(text, "m.toml");
  EXPECT_FALSE(m.is_ok()) << text;
  return m.is_ok() ? "" : m.status().message();
}

TEST(Mixture, ParsesScalesAndDefaults) {
  auto m = parse_mixture("total_tokens = 18_000_000_000_000\nscale = \"1/360\"\n[weights]\n\"code/*\" = 0.3\n\"web/q4\" = 2\n",
                         "m.toml");
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_EQ(m->total_tokens, 18000000000000);
  EXPECT_EQ(m->scale_num, 1);
  EXPECT_EQ(m->scale_den, 360);
  EXPECT_EQ(m->max_epochs, 1.0);
  EXPECT_EQ(m->weights.size(), 2u);
  auto f = parse_mixture("total_tokens = 100\nscale = 0.25\nmax_epochs = 2\nseed = 9\n", "m.toml");
  ASSERT_TRUE(f.is_ok());
  EXPECT_EQ(f->scale_num, 1);
  EXPECT_EQ(f->scale_den, 4);
  EXPECT_EQ(f->seed, 9u);
  auto g = parse_mixture("total_tokens = 100\nscale = \"6/8\"\n", "m.toml");
  ASSERT_TRUE(g.is_ok());
  EXPECT_EQ(g->scale_num, 3);
  EXPECT_EQ(g->scale_den, 4);
}

TEST(Mixture, ErrorsNameFileLineAndKey) {
  EXPECT_THAT(error_of("scale = \"1/2\"\n"), HasSubstr("m.toml: total_tokens: required"));
  EXPECT_THAT(error_of("total_tokens = 10\nscale = \"2/1\"\n"), HasSubstr("m.toml:2: scale: expected a fraction"));
  EXPECT_THAT(error_of("total_tokens = 10\nscale = 1.5\n"), HasSubstr("m.toml:2: scale: expected a number in (0, 1], got 1.5"));
  EXPECT_THAT(error_of("total_tokens = 10\nmax_epochs = 0\n"), HasSubstr("m.toml:2: max_epochs: expected float > 0, got 0"));
  EXPECT_THAT(error_of("total_tokens = 10\nmax_epoch = 2\n"), HasSubstr("m.toml:2: max_epoch: unknown key"));
  EXPECT_THAT(error_of("total_tokens = \"lots\"\n"), HasSubstr("m.toml:1: total_tokens: expected integer"));
  EXPECT_THAT(error_of("total_tokens = 10\n[weights]\n\"a/*\" = -1\n"), HasSubstr("m.toml:3: weights.\"a/*\": expected number >= 0, got -1"));
  EXPECT_THAT(error_of("total_tokens = 10\n[weights]\n\"a/*\" = \"x\"\n"), HasSubstr("weights.\"a/*\": expected number >= 0, got \"x\""));
  EXPECT_THAT(error_of("total_tokens = 10\n[weights]\na = 1\n[topic_weights]\nb = 1\n"), HasSubstr("not both"));
  EXPECT_THAT(error_of("total_tokens = 10\nweights = 3\n"), HasSubstr("m.toml:2: weights: expected table of \"key\" = number >= 0, got 3"));
  EXPECT_THAT(error_of("total_tokens = [\n"), HasSubstr("TOML syntax error"));
}

// A bucket (topic, quality) matched by two patterns of one table is an
// error in every table: there is no precedence by key order.
TEST(Mixture, OverlappingPatternsAreRefusedInEveryTable) {
  td::TempDir dir;
  const std::string path = td::build_labelled_dataset(dir.path(), td::labelled_jsonl({"web", "code"}, 2, 6), 0.0, 320);
  auto ds = Dataset::open(path);
  ASSERT_TRUE(ds.is_ok()) << ds.status().message();
  auto plan_error = [&](const std::string& text) {
    auto m = parse_mixture(text, "m.toml");
    EXPECT_TRUE(m.is_ok()) << m.status().message();
    auto p = plan_mixture(*ds.value(), m.value(), 16);
    return p.is_ok() ? std::string() : p.status().message();
  };
  EXPECT_THAT(plan_error("total_tokens = 64\n[weights]\n\"web/*\" = 1\n\"*/q1\" = 1\n"),
              HasSubstr("weights: bucket \"web/q1\" matches both \"web/*\" and \"*/q1\""));
  EXPECT_THAT(plan_error("total_tokens = 64\n[topic_weights]\n\"w*\" = 1\nweb = 2\n"),
              HasSubstr("topic_weights: \"web\" matches both \"w*\" and \"web\""));
  EXPECT_THAT(plan_error("total_tokens = 64\n[quality_weights]\n\"q?\" = 1\nq0 = 3\n"),
              HasSubstr("quality_weights: \"q0\" matches both \"q?\" and \"q0\""));
  // Disjoint patterns plan.
  EXPECT_EQ(plan_error("total_tokens = 64\n[topic_weights]\n\"w*\" = 1\ncode = 2\n"), "");
}

}  // namespace
}  // namespace mt
