// supervise_slurm_allocation_test.cpp — the hosts of a Slurm allocation from
// its variables (supervise/slurm_allocation.h): hostlists with ranges and
// padding, task counts with repeats, and refusals that name the variable.
#include "supervise/slurm_allocation.h"

#include <gtest/gtest.h>

#include <map>

namespace mt {
namespace {

EnvLookup env_of(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(SlurmAllocation, HostlistsExpandWithTheirPadding) {
  auto h = expand_hostlist("gpu[01-03,7],login2,rack[9-10]a", "V");
  ASSERT_TRUE(h) << h.status().message();
  // Each range keeps the width of its own lower bound, as `scontrol show hostnames` does.
  EXPECT_EQ(*h, (std::vector<std::string>{"gpu01", "gpu02", "gpu03", "gpu7", "login2", "rack9a", "rack10a"}));
  for (const char* bad : {"gpu[01-", "gpu]1", "gpu[3-1]", "gpu[a]", "a,,b", "x[1][2]"}) {
    auto r = expand_hostlist(bad, "SLURM_JOB_NODELIST");
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.status().message().find("SLURM_JOB_NODELIST=\"" + std::string(bad) + "\""), std::string::npos)
        << r.status().message();
  }
}

TEST(SlurmAllocation, TaskCountsExpandTheirRepeats) {
  auto c = expand_tasks_per_node("8(x3),4", "V");
  ASSERT_TRUE(c) << c.status().message();
  EXPECT_EQ(*c, (std::vector<int64_t>{8, 8, 8, 4}));
  for (const char* bad : {"0", "8(x0)", "x", "8(x2", "2a"}) EXPECT_FALSE(expand_tasks_per_node(bad, "V")) << bad;
}

TEST(SlurmAllocation, HostsComeFromTheAllocationWithSparesLast) {
  auto hosts = allocation_hosts(
      1, env_of({{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "n[1-3]"}, {"SLURM_TASKS_PER_NODE", "2(x2),1"}}));
  ASSERT_TRUE(hosts) << hosts.status().message();
  ASSERT_EQ(hosts->size(), 3u);
  EXPECT_EQ((*hosts)[0].name, "n1");
  EXPECT_EQ((*hosts)[1].slots, 2);
  EXPECT_EQ((*hosts)[2].slots, 1);
  EXPECT_EQ((*hosts)[2].state, HostState::kSpare);
  EXPECT_EQ(active_ranks(*hosts), 4);
  // One count for every host when only --ntasks-per-node was given.
  auto same = allocation_hosts(
      0, env_of({{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "n[1-3]"}, {"SLURM_NTASKS_PER_NODE", "4"}}));
  ASSERT_TRUE(same) << same.status().message();
  EXPECT_EQ(active_ranks(*same), 12);
}

TEST(SlurmAllocation, RefusalsNameTheVariable) {
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {{}, "SLURM_JOB_ID is not set"},
      {{{"SLURM_JOB_ID", "7"}}, "SLURM_JOB_NODELIST is not set"},
      {{{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "n1"}}, "SLURM_TASKS_PER_NODE nor SLURM_NTASKS_PER_NODE"},
      {{{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "n[1-2]"}, {"SLURM_TASKS_PER_NODE", "2"}},
       "SLURM_TASKS_PER_NODE=\"2\" gives 1 counts for the 2 hosts"},
  };
  for (const auto& [vars, want] : cases) {
    auto r = allocation_hosts(0, env_of(vars));
    ASSERT_FALSE(r) << want;
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
  }
  EXPECT_FALSE(in_slurm_allocation(env_of({})));
  EXPECT_TRUE(in_slurm_allocation(env_of({{"SLURM_JOB_ID", "7"}})));
}

}  // namespace
}  // namespace mt
