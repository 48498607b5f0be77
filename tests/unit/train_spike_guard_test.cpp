// train_spike_guard_test.cpp — the spike guard's verdicts: nothing before
// min_history, a value far above the baseline is a spike and a normal one is
// not, non-finite values are spikes under every policy, the lr-cooldown ramp,
// and the state round-trips through JSON (checkpoints) to the same verdicts.
#include "train/spike_guard.h"

#include <gtest/gtest.h>

#include <cmath>

namespace mt {
namespace {

SpikeConfig config(SpikePolicy p) {
  SpikeConfig c;
  c.policy = p;
  c.window = 10;
  c.min_history = 5;
  c.z = 4.0;
  c.cooldown_factor = 0.2;
  c.cooldown_steps = 4;
  return c;
}

TEST(SpikeGuard, FlagsOnlyWhatIsFarAboveTheBaseline) {
  SpikeGuard g(config(SpikePolicy::kSkip));
  EXPECT_FALSE(g.check(100.0, 100.0).spike);  // no baseline yet: no verdict
  for (int i = 0; i < 10; ++i) g.accept(3.0 + 0.01 * (i % 3), 1.0 + 0.05 * (i % 2));
  EXPECT_FALSE(g.check(3.02, 1.04).spike);
  const SpikeVerdict loss = g.check(3.5, 1.0);  // about 60 standard deviations up
  EXPECT_TRUE(loss.spike);
  EXPECT_GT(loss.loss_z, 4.0);
  EXPECT_NE(loss.why.find("loss"), std::string::npos);
  const SpikeVerdict norm = g.check(3.0, 5.0);
  EXPECT_TRUE(norm.spike);
  EXPECT_NE(norm.why.find("gradient norm"), std::string::npos);
  EXPECT_FALSE(g.check(2.0, 0.5).spike);  // far below is no spike
}

TEST(SpikeGuard, NonFiniteIsASpikeUnderEveryPolicy) {
  for (SpikePolicy p : {SpikePolicy::kOff, SpikePolicy::kSkip, SpikePolicy::kRollback}) {
    SpikeGuard g(config(p));
    EXPECT_TRUE(g.check(std::nan(""), 1.0).spike);
    EXPECT_TRUE(g.check(3.0, INFINITY).spike);
  }
  SpikeGuard off(config(SpikePolicy::kOff));
  for (int i = 0; i < 10; ++i) off.accept(3.0, 1.0);
  EXPECT_FALSE(off.check(300.0, 1.0).spike);  // off: finite values always pass
}

TEST(SpikeGuard, CooldownRampsBackToTheSchedule) {
  SpikeGuard g(config(SpikePolicy::kLrCooldown));
  EXPECT_EQ(g.lr_factor(7), 1.0);
  g.start_cooldown(10);
  EXPECT_EQ(g.lr_factor(9), 1.0);
  EXPECT_DOUBLE_EQ(g.lr_factor(10), 0.2);
  EXPECT_DOUBLE_EQ(g.lr_factor(12), 0.6);
  EXPECT_EQ(g.lr_factor(14), 1.0);
  SpikeGuard skip(config(SpikePolicy::kSkip));
  skip.start_cooldown(10);
  EXPECT_EQ(skip.lr_factor(10), 1.0);  // only lr-cooldown scales the lr
}

TEST(SpikeGuard, StateRoundTripsToTheSameVerdicts) {
  SpikeGuard a(config(SpikePolicy::kLrCooldown));
  for (int i = 0; i < 12; ++i) a.accept(3.0 + 0.1 * std::sin(i), 1.0 + 0.1 * std::cos(i));
  a.start_cooldown(20);
  a.in_a_row = 2;
  a.total = 3;
  SpikeGuard b(config(SpikePolicy::kLrCooldown));
  ASSERT_TRUE(b.from_json(nlohmann::json::parse(a.to_json().dump())));
  for (double x : {2.9, 3.05, 3.3, 4.0}) {
    const SpikeVerdict va = a.check(x, x / 3), vb = b.check(x, x / 3);
    EXPECT_EQ(va.spike, vb.spike);
    EXPECT_EQ(va.loss_z, vb.loss_z);
  }
  EXPECT_EQ(b.lr_factor(21), a.lr_factor(21));
  EXPECT_EQ(b.in_a_row, 2);
  EXPECT_EQ(b.total, 3);
  EXPECT_FALSE(b.from_json(nlohmann::json::object()));
}

}  // namespace
}  // namespace mt
