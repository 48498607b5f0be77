// train_health_monitor_test.cpp — train/health_monitor.h: what each spike policy
// makes of a spike (stop, continue, roll back), the in-a-row and
// rollbacks-to-one-checkpoint limits, the checkpoint gate of periodic health
// checks, the recompute check naming the rank whose loss disagrees (on a
// world of two threads), and the guard's state through a checkpoint with and
// without this process's counters.
#include "train/health_monitor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "support/thread_comm.h"

namespace mt {
namespace {

TrainConfig config(SpikePolicy p) {
  TrainConfig tc;
  tc.spike.policy = p;
  tc.spike.window = 10;
  tc.spike.min_history = 5;
  tc.spike.z = 4.0;
  tc.spike.max_in_a_row = 2;
  return tc;
}

// Ten ordinary steps, then one far above them.
StepResult spike_after_baseline(HealthMonitor& m) {
  for (int s = 1; s <= 10; ++s) EXPECT_FALSE(m.judge(s, 3.0 + 0.01 * (s % 3), 1.0).spike);
  StepResult r;
  r.step = 11;
  r.loss = 9.0;
  r.grad_norm = 1.0;
  const SpikeVerdict v = m.judge(11, r.loss, r.grad_norm);
  EXPECT_TRUE(v.spike);
  r.spike = v.why;
  return r;
}

TEST(HealthMonitor, EachPolicyDecidesWhatASpikeDoes) {
  LocalComm w;
  {
    HealthMonitor off(config(SpikePolicy::kOff), w, "");
    // policy "off" judges only non-finite values as spikes
    for (int s = 1; s <= 10; ++s) off.judge(s, 3.0, 1.0);
    EXPECT_FALSE(off.judge(11, 9.0, 1.0).spike);
    StepResult r;
    r.step = 12;
    r.spike = off.judge(12, std::nan(""), 1.0).why;
    ASSERT_FALSE(r.spike.empty());
    auto next = off.after_spike(r);
    ASSERT_FALSE(next.is_ok());
    EXPECT_NE(next.status().message().find("spike.policy = \"off\""), std::string::npos);
  }
  {
    HealthMonitor skip(config(SpikePolicy::kSkip), w, "");
    auto next = skip.after_spike(spike_after_baseline(skip));
    ASSERT_TRUE(next.is_ok()) << next.status().message();
    EXPECT_EQ(next.value(), AfterSpike::kContinue);
    EXPECT_EQ(skip.lr_factor(11), 1.0);
  }
  {
    HealthMonitor cool(config(SpikePolicy::kLrCooldown), w, "");
    auto next = cool.after_spike(spike_after_baseline(cool));
    ASSERT_TRUE(next.is_ok());
    EXPECT_LT(cool.lr_factor(11), 1.0);  // the step after the spike runs cooler
  }
  {
    HealthMonitor back(config(SpikePolicy::kRollback), w, "");
    auto next = back.after_spike(spike_after_baseline(back));
    ASSERT_TRUE(next.is_ok());
    EXPECT_EQ(next.value(), AfterSpike::kRollback);
  }
}

TEST(HealthMonitor, SpikesInARowAndRepeatedRollbacksStopTheRun) {
  LocalComm w;
  HealthMonitor m(config(SpikePolicy::kSkip), w, "");
  StepResult r = spike_after_baseline(m);
  EXPECT_TRUE(m.after_spike(r).is_ok());
  r.step = 12;
  ASSERT_TRUE(m.judge(12, 9.0, 1.0).spike);
  auto second = m.after_spike(r);
  ASSERT_FALSE(second.is_ok());
  EXPECT_NE(second.status().message().find("2 spikes in a row"), std::string::npos) << second.status().message();

  EXPECT_TRUE(m.rolled_back(20, 8).is_ok());
  EXPECT_TRUE(m.rolled_back(25, 8).is_ok());
  EXPECT_TRUE(m.rolled_back(26, 16).is_ok());  // another checkpoint counts apart
  const Status third = m.rolled_back(30, 8);
  ASSERT_FALSE(third);
  EXPECT_NE(third.message().find("rolled back to step 8 2 times"), std::string::npos) << third.message();
}

TEST(HealthMonitor, PeriodicChecksGateCheckpoints) {
  LocalComm w;
  TrainConfig tc = config(SpikePolicy::kSkip);
  HealthMonitor none(tc, w, "");
  EXPECT_FALSE(none.due_after(4));
  EXPECT_FALSE(none.check_needed_before_checkpoint(4));
  tc.health.every = 2;
  HealthMonitor m(tc, w, "");
  EXPECT_TRUE(m.due_after(4));
  EXPECT_FALSE(m.due_after(5));
  EXPECT_TRUE(m.check_needed_before_checkpoint(5));
  ASSERT_TRUE(m.check(5, nullptr));  // the GEMM probe on this machine
  EXPECT_EQ(m.last_passed(), 5);
  EXPECT_FALSE(m.check_needed_before_checkpoint(5));
}

TEST(HealthMonitor, RecomputeCheckNamesTheRankThatDisagrees) {
  TrainConfig tc = config(SpikePolicy::kSkip);
  tc.health.recompute = true;
  testing::ThreadComm::World shared(3);
  std::vector<Status> got(3);
  auto run = [&](int r) {
    testing::ThreadComm c(shared, r);
    HealthMonitor m(tc, c, "");
    // Rank 2 computes every loss 1 ulp high.
    got[size_t(r)] = m.check(7, [&](int64_t owner) {
      const double loss = 2.0 + 0.25 * double(owner);
      return r == 2 ? std::nextafter(loss, 10.0) : loss;
    });
  };
  std::thread t0(run, 0), t1(run, 1), t2(run, 2);
  t0.join();
  t1.join();
  t2.join();
  for (const Status& s : got) {
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("culprit rank 2:"), std::string::npos) << s.message();
  }
}

TEST(HealthMonitor, GuardStateRoundTripsThroughACheckpoint) {
  LocalComm w;
  HealthMonitor a(config(SpikePolicy::kSkip), w, "");
  spike_after_baseline(a);
  const nlohmann::json saved = a.to_json();
  EXPECT_EQ(saved["in_a_row"], 1);
  HealthMonitor b(config(SpikePolicy::kSkip), w, "");
  ASSERT_TRUE(b.restore(&saved, false));
  EXPECT_EQ(b.to_json(), saved);
  // A rollback restores an older state but keeps this process's counters.
  HealthMonitor c(config(SpikePolicy::kSkip), w, "");
  spike_after_baseline(c);
  ASSERT_TRUE(c.restore(nullptr, true));
  EXPECT_EQ(c.to_json()["total"], 1);
  ASSERT_TRUE(c.restore(nullptr, false));
  EXPECT_EQ(c.to_json()["total"], 0);
}

}  // namespace
}  // namespace mt
