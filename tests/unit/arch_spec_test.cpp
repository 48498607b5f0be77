// arch_spec_test.cpp — the comparison file of `moetrain arch compare`: the
// seed's spec (configs/arch/seed.toml) loads, plans every candidate's
// ladder and hero, and the planner's inference figures order the candidates
// as their attention implies; the pure steps (the hero plan, the ranking from
// records) give the same bytes twice; a projection's interval holds its value.
#include <gtest/gtest.h>

#include <cmath>

#include "arch/arch_compare.h"
#include "arch/arch_plan.h"
#include "arch/arch_rank.h"
#include "arch/arch_spec.h"

namespace mt {
namespace {

using json = nlohmann::json;
const std::string kSeed = std::string(MT_SOURCE_DIR) + "/configs/arch/seed.toml";

TEST(ArchSpec, SeedLoadsAndEveryCandidatePlans) {
  auto spec = load_arch_spec(kSeed, {});
  ASSERT_TRUE(spec.is_ok()) << spec.status().message();
  ASSERT_EQ(spec->candidates.size(), 4u);
  EXPECT_EQ(spec->rank_by, RankBy::kLossAtEqualWallclock);
  auto plan = plan_arch_compare(*spec, "/tmp/never-written");
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  std::map<std::string, json> hero;
  for (size_t i = 0; i < spec->candidates.size(); ++i) {
    const CandidateLadder& l = plan->ladders[i];
    EXPECT_EQ(l.plan.units.size(), 6u) << "three rungs, a cooldown branch each: six fit points";
    auto h = plan_candidate(*spec, spec->candidates[i]);
    ASSERT_TRUE(h.is_ok()) << h.status().message();
    auto again = plan_candidate(*spec, spec->candidates[i]);
    EXPECT_EQ(h->dump(), again->dump()) << "the planner is pure";
    EXPECT_GT((*h)["mfu"].get<double>(), 0.05);
    EXPECT_EQ((*h)["ep"], 64);
    hero[spec->candidates[i].name] = *h;
  }
  auto kv = [&](const char* n) { return hero[n]["inference"]["kv_cache_bytes_per_token"].get<double>(); };
  auto seq = [&](const char* n) {
    const json& i = hero[n]["inference"];
    return i["kv_cache_bytes_per_sequence"].get<double>() + i["state_bytes_per_sequence"].get<double>();
  };
  EXPECT_LT(kv("mla-global"), kv("gqa-swa")) << "MLA caches a latent";
  EXPECT_EQ(kv("mla-swa"), kv("mla-global"));
  EXPECT_LT(kv("hybrid"), kv("gqa-swa")) << "one layer in four keeps a cache";
  EXPECT_LT(seq("mla-swa"), seq("mla-global")) << "windows keep only their keys";
  // Equal compute: a candidate dearer per token trains on fewer tokens.
  EXPECT_NEAR(hero["gqa-swa"]["tokens"].get<double>() * hero["gqa-swa"]["flops_per_token"].get<double>(),
              spec->hero_flops, 1e-6 * spec->hero_flops);
}

TEST(ArchSpec, OverridesAreCheckedByKey) {
  auto bad = load_arch_spec(kSeed, {"arch.rank_by=\"fastest\""});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("arch.rank_by"), std::string::npos) << bad.status().message();
  auto dup = load_arch_spec(kSeed, {"candidate[1].name=\"gqa-swa\""});
  ASSERT_FALSE(dup.is_ok());
  EXPECT_NE(dup.status().message().find("candidate[1].name"), std::string::npos) << dup.status().message();
}

TEST(ArchRank, RanksByTheRuleAndIntervalsHoldTheValue) {
  auto spec = load_arch_spec(kSeed, {"arch.rank_by=\"loss_at_equal_compute\""});
  ASSERT_TRUE(spec.is_ok()) << spec.status().message();
  spec->candidates.resize(2);
  // Two laws that differ only in E: the lower E must rank first at any (N, D).
  auto fit = [](double E) {
    json f;
    f["runs"] = json::array({{{"name", "r"}, {"active_params", 1e5}, {"tokens", 1e6}, {"flops", 1e12}, {"loss", 2.0}}});
    f["law"] = {{"E", E}, {"A", 400.0}, {"B", 400.0}, {"alpha", 0.34}, {"beta", 0.28}};
    f["bootstrap_laws"] = json::array();
    for (int b = 0; b < 20; ++b) f["bootstrap_laws"].push_back({E + 0.01 * (b - 10), 400.0, 400.0, 0.34, 0.28});
    return f;
  };
  std::vector<CandidateRecords> rec(2);
  for (size_t i = 0; i < 2; ++i) {
    auto p = plan_candidate(*spec, spec->candidates[i]);
    ASSERT_TRUE(p.is_ok());
    rec[i].plan = *p;
    rec[i].bench = {{"tokens_per_s", 100.0 * double(i + 1)}};
    rec[i].ep = {{"skipped", "test"}};
  }
  rec[0].fit = fit(1.9);
  rec[1].fit = fit(1.7);
  const json cmp = compare_json(*spec, rec);
  EXPECT_EQ(cmp["ranking"], json::array({spec->candidates[1].name, spec->candidates[0].name}));
  EXPECT_EQ(cmp["candidates"][1]["rank"], 1);
  for (const json& c : cmp["candidates"]) {
    const json& l = c["projection"]["equal_compute"]["loss"];
    EXPECT_LE(l["lo"].get<double>(), l["value"].get<double>());
    EXPECT_GE(l["hi"].get<double>(), l["value"].get<double>());
    // The curve ends at the hero: the law at the hero's N and D.
    EXPECT_NEAR(c["projection"]["curve"].back()["value"].get<double>(), l["value"].get<double>(), 1e-9);
  }
  EXPECT_EQ(compare_json(*spec, rec).dump(), cmp.dump()) << "a pure function of the records";
  // A failed fit ranks last with its reason in the verdict.
  rec[1].fit = {{"runs", json::array()}, {"error", "too few runs"}};
  const json worse = compare_json(*spec, rec);
  EXPECT_EQ(worse["ranking"][0], spec->candidates[0].name);
  EXPECT_NE(worse["verdict"].dump().find("too few runs"), std::string::npos) << worse["verdict"].dump();
}

}  // namespace
}  // namespace mt
