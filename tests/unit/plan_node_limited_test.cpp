// plan_node_limited_test.cpp — group-limited expert routing (DeepSeek-V3
// sections 2.1.2 and 3.2.2: each token to at most M nodes) in the planner:
// the NVLink domains a token reaches and the all-to-all time by hand, the key
// checks and the CPU trainer's refusal.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "plan/perf.h"
#include "train/run_config.h"
#include "train/trainer.h"

namespace mt::plan {
namespace {

ModelConfig deepseek_routing(int64_t max_groups) {
  ModelConfig m;
  m.d_model = 7168, m.n_heads = 128, m.n_kv_heads = 128, m.n_layers = 4;
  m.n_experts = 256, m.top_k = 8, m.expert_groups = 8, m.max_groups_per_token = max_groups;
  return m;
}

TEST(PlanNodeLimited, DomainsPerToken) {
  // EP 64 over 8-GPU nodes: 8 domains, one 32-expert group per node; M = 4 bounds a token to 4 nodes.
  EXPECT_DOUBLE_EQ(ep_domains_per_token(deepseek_routing(4), {64, 8}), 4);
  EXPECT_DOUBLE_EQ(ep_domains_per_token(deepseek_routing(0), {64, 8}), 8);  // unlimited: K
  EXPECT_DOUBLE_EQ(ep_domains_per_token(deepseek_routing(4), {16, 8}), 2);  // EP spans 2 nodes only
  // EP 128 over 8-GPU nodes: a group spans 2 nodes, so 4 groups reach up to 8 = K.
  EXPECT_DOUBLE_EQ(ep_domains_per_token(deepseek_routing(4), {128, 8}), 8);
  EXPECT_DOUBLE_EQ(ep_domains_per_token(deepseek_routing(2), {128, 8}), 4);
}

TEST(PlanNodeLimited, AllToAllByHand) {
  // 1 GB sent per GPU, 64 GPUs in 8 domains, K = 8 rows per token reaching 4 domains: a destination is
  // remote with odds 7/8, so 1e9 x 4/8 x 7/8 = 0.4375 GB cross at 10 GB/s (43.75 ms); NVLink carries the
  // home rows 1e9 x 7/64 and the forwarded 1e9 x 7/8 x 7/8 = 0.875 GB at 100 GB/s (8.75 ms).
  const Links l{100e9, 10e9, 0.0};
  const double S = 1e9;
  EXPECT_DOUBLE_EQ(all_to_all_node_limited_s(S, 8, 4, {64, 8}, l), S * 4 / 8 * 7 / 8 / 10e9);
  // Unlimited routing sends every remote row across: 1e9 x 56/64 at 10 GB/s = 87.5 ms, twice as long.
  EXPECT_DOUBLE_EQ(all_to_all_s(S, {64, 8}, l), S * 56 / 64 / 10e9);
  // One destination domain per token: 1/8 of the bytes x 7/8; NVLink (8.75 ms) still below 10.9 ms.
  EXPECT_DOUBLE_EQ(all_to_all_node_limited_s(S, 8, 1, {64, 8}, l),
                   std::max(S / 8 * 7 / 8 / 10e9, (S * 7 / 64 + S * 7 / 8 * 7 / 8) / 100e9));
  // Inside one domain nothing crosses: the plain all-to-all.
  EXPECT_DOUBLE_EQ(all_to_all_node_limited_s(S, 8, 4, {8, 8}, l), all_to_all_s(S, {8, 8}, l));
  // Two hops: twice the latency.
  const Links lat{100e9, 10e9, 1e-5};
  EXPECT_DOUBLE_EQ(all_to_all_node_limited_s(S, 8, 4, {64, 8}, lat), S * 4 / 8 * 7 / 8 / 10e9 + 2e-5);
}

constexpr const char* kMoe = R"(
[model]
vocab_size = 300
d_model = 64
n_layers = 2
n_heads = 4
n_experts = 16
top_k = 4
expert_groups = 4
max_groups_per_token = 2
[train]
seq_len = 32
batch_size = 1
steps = 1
)";

TEST(PlanNodeLimited, KeysAreCheckedAndTheTrainerRefusesIt) {
  auto ok = parse_run_config(kMoe, "moe.toml", {});
  ASSERT_TRUE(ok.is_ok()) << ok.status().message();
  Status refused = check_trainer_limits(*ok);
  EXPECT_FALSE(refused.is_ok());
  EXPECT_THAT(refused.message(), testing::HasSubstr("model.max_groups_per_token"));
  EXPECT_THAT(refused.message(), testing::HasSubstr("does not implement it yet"));
  auto groups = parse_run_config(kMoe, "moe.toml", {"model.expert_groups=3"});
  ASSERT_FALSE(groups.is_ok());
  EXPECT_THAT(groups.status().message(), testing::HasSubstr("model.expert_groups"));
  auto too_many = parse_run_config(kMoe, "moe.toml", {"model.max_groups_per_token=5"});
  ASSERT_FALSE(too_many.is_ok());
  EXPECT_THAT(too_many.status().message(), testing::HasSubstr("model.max_groups_per_token"));
  // One group of 4 experts holds top_k = 4, but top_k = 5 needs two.
  auto k = parse_run_config(kMoe, "moe.toml", {"model.max_groups_per_token=1", "model.top_k=5"});
  ASSERT_FALSE(k.is_ok());
  EXPECT_THAT(k.status().message(), testing::HasSubstr("model.top_k"));
}

}  // namespace
}  // namespace mt::plan
