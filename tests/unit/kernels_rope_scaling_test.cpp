// kernels_rope_scaling_test.cpp — RoPE for a longer context
// (kernels/cpu/rope.h): position interpolation divides every frequency by
// the factor (so position s t rotates as position t did); YaRN keeps the
// pairs that turn more than beta_fast times over the original length,
// interpolates those turning fewer than beta_slow times, ramps between, and
// scales cos and sin by 0.1 ln s + 1 — checked against the paper's
// definition in terms of rotations r(d) = L / wavelength(d), written here
// independently of the kernel. Bad settings are refused naming the key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/rope.h"
#include "model/config.h"

namespace mt {
namespace {

using ::testing::HasSubstr;

TEST(RopeScaling, NoneIsTheBaseFrequencyAndLinearDividesIt) {
  RopeParams p;
  p.theta = 500.0;
  const int64_t Dh = 16;
  for (int64_t i = 0; i < Dh / 2; ++i) EXPECT_EQ(rope_inv_freq(p, i, Dh), std::pow(500.0, -2.0 * double(i) / 16.0));
  // Position interpolation: position 4 t of the scaled table is position t of the plain one.
  RopeParams lin = p;
  lin.scaling = RopeScalingKind::kLinear;
  lin.factor = 4.0;
  const int64_t T = 40, half = Dh / 2;
  std::vector<float> c0(T * half), s0(T * half), c1(T * half), s1(T * half);
  rope_tables(c0.data(), s0.data(), T, Dh, p);
  rope_tables(c1.data(), s1.data(), T, Dh, lin);
  for (int64_t t = 0; 4 * t < T; ++t)
    for (int64_t i = 0; i < half; ++i) {
      EXPECT_NEAR(c1[4 * t * half + i], c0[t * half + i], 1e-6) << t << " " << i;
      EXPECT_NEAR(s1[4 * t * half + i], s0[t * half + i], 1e-6) << t << " " << i;
    }
}

TEST(RopeScaling, YarnKeepsFastPairsInterpolatesSlowOnesAndScalesByItsTemperature) {
  RopeParams y;
  y.theta = 10000.0;
  y.scaling = RopeScalingKind::kYarn;
  y.factor = 8.0;
  y.original_len = 4096;
  const int64_t Dh = 128;
  int kept = 0, interpolated = 0, ramped = 0;
  for (int64_t i = 0; i < Dh / 2; ++i) {
    const double base = std::pow(y.theta, -2.0 * double(i) / double(Dh));
    const double rotations = double(y.original_len) * base / (2.0 * M_PI);  // turns over the original context
    const double f = rope_inv_freq(y, i, Dh);
    if (rotations > y.beta_fast + 1.0) {  // well above: high frequency, kept
      EXPECT_DOUBLE_EQ(f, base) << "pair " << i;
      ++kept;
    } else if (rotations < y.beta_slow - 0.2) {  // well below: low frequency, interpolated
      EXPECT_DOUBLE_EQ(f, base / y.factor) << "pair " << i;
      ++interpolated;
    } else {
      EXPECT_LE(f, base * (1 + 1e-12));
      EXPECT_GE(f, base / y.factor * (1 - 1e-12));
      ++ramped;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(interpolated, 0);
  EXPECT_GT(ramped, 0);
  // The temperature: cos(0) = the attention factor, 0.1 ln 8 + 1 unless given.
  std::vector<float> c(Dh / 2), s(Dh / 2);
  rope_tables(c.data(), s.data(), 1, Dh, y);
  EXPECT_NEAR(c[0], 0.1 * std::log(8.0) + 1.0, 1e-6);
  y.attention_factor = 1.25;
  rope_tables(c.data(), s.data(), 1, Dh, y);
  EXPECT_NEAR(c[5], 1.25, 1e-6);
}

TEST(RopeScaling, BadSettingsNameTheKey) {
  ModelConfig c;
  c.rope_scaling = RopeScalingKind::kYarn;
  c.rope_factor = 4.0;
  ConfigOrigins o("m.toml");
  EXPECT_THAT(c.validate(o, 64).message(), HasSubstr("model.rope_original_len"));
  c.rope_original_len = 32;
  c.yarn_beta_fast = 0.5;
  EXPECT_THAT(c.validate(o, 64).message(), HasSubstr("model.yarn_beta_fast"));
  c.yarn_beta_fast = 32.0;
  EXPECT_TRUE(c.validate(o, 64).is_ok()) << c.validate(o, 64).message();
  c.attention = AttentionKind::kMla;
  c.kv_lora_rank = 16;
  c.qk_nope_head_dim = 8;
  c.qk_rope_head_dim = 4;
  c.v_head_dim = 8;
  EXPECT_THAT(c.validate(o, 64).message(), HasSubstr("model.rope_scaling"));
}

}  // namespace
}  // namespace mt
