// train_phase_schedule_test.cpp — [[phase]] tables expanded into steps: a
// run without phases is exactly the run it always was; lengths in steps or
// tokens, batch ramps, learning-rate segments and data segments follow
// their definitions; bad phases are refused naming the key; --stop-at takes
// a phase's name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "optim/lr_schedule.h"
#include "train/phase_schedule.h"
#include "train/run_config.h"

namespace mt {
namespace {

using ::testing::HasSubstr;

const char* kBase = R"(
[model]
vocab_size = 320
d_model = 64
n_layers = 2
n_heads = 4
n_kv_heads = 2
n_experts = 4
d_expert = 64
top_k = 2
[train]
batch_size = 4
seq_len = 64
lr = 0.01
min_lr_ratio = 0.1
warmup_steps = 3
)";

RunConfig parse_ok(const std::string& extra) {
  auto c = parse_run_config(std::string(kBase) + extra, "test.toml", {});
  EXPECT_TRUE(c.is_ok()) << c.status().message();
  return c.is_ok() ? *c : RunConfig();
}

std::string parse_error(const std::string& extra, const std::vector<std::string>& sets = {}) {
  auto c = parse_run_config(std::string(kBase) + extra, "test.toml", sets);
  EXPECT_FALSE(c.is_ok());
  return c.is_ok() ? std::string() : c.status().message();
}

TEST(PhaseSchedule, WithoutPhasesEveryStepIsAsItWas) {
  const RunConfig c = parse_ok("steps = 50\ngrad_accum = 3\n");
  auto s = PhaseSchedule::make(c);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_FALSE(s->phased());
  EXPECT_EQ(s->total_steps(), 50);
  ASSERT_EQ(s->segments().size(), 1u);
  for (int64_t step = 0; step < 50; ++step) {
    EXPECT_EQ(s->batch_at(step), 12);
    EXPECT_EQ(s->micro_batches(step), 3);
    EXPECT_EQ(s->first_sequence(step), step * 12);
    EXPECT_EQ(s->tokens_before(step), step * 12 * 64);
    EXPECT_EQ(s->learning_rate(step), learning_rate(c.train.schedule, step, 50));  // bit for bit
  }
  EXPECT_EQ(s->total_tokens(), 50 * 12 * 64);
}

const char* kPhased = R"(
[[phase]]
name = "ramp"
steps = 6
ramp_from = 4
global_batch = 16
[[phase]]
name = "main"
tokens = 10000
global_batch = 16
lr = "stable"
[[phase]]
name = "anneal"
steps = 5
global_batch = 8
lr = "decay"
)";

TEST(PhaseSchedule, LengthsRampsAndSegmentsFollowTheirDefinitions) {
  const RunConfig c = parse_ok(kPhased);
  EXPECT_EQ(c.train.steps, 6 + 10 + 5);  // main: ceil(10000 / (16 x 64)) = 10 steps
  auto s = PhaseSchedule::make(c);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  ASSERT_EQ(s->phases().size(), 3u);
  const auto& ph = s->phases();
  // The ramp: 4 + 12 i / 6 rounded to a multiple of the micro-batch (4).
  const int64_t ramp[] = {4, 8, 8, 12, 12, 16};
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(s->batch_at(i), ramp[i]) << i;
  EXPECT_EQ(ph[0].sequences, 60);
  EXPECT_EQ(ph[1].first_step, 6);
  EXPECT_EQ(ph[1].steps, 10);
  EXPECT_EQ(ph[2].first_step, 16);
  EXPECT_EQ(s->micro_batches(17), 2);
  // One mixture throughout: one data segment, read front to back.
  ASSERT_EQ(s->segments().size(), 1u);
  int64_t next = 0;
  for (int64_t step = 0; step < s->total_steps(); ++step) {
    EXPECT_EQ(s->first_sequence(step), next) << step;
    EXPECT_EQ(s->tokens_before(step), next * 64) << step;
    next += s->batch_at(step);
  }
  EXPECT_EQ(s->total_tokens(), next * 64);
  // Learning rates: the run's schedule, then stable, then a linear decay to lr x min_lr_ratio.
  EXPECT_EQ(s->learning_rate(0), learning_rate(c.train.schedule, 0, 21));
  EXPECT_EQ(s->learning_rate(10), 0.01);
  EXPECT_DOUBLE_EQ(s->learning_rate(16), 0.01 + (0.001 - 0.01) * 0.2);
  EXPECT_DOUBLE_EQ(s->learning_rate(20), 0.001);
}

TEST(PhaseSchedule, ATokensRampStopsOnceItsTokensAreTrained) {
  const RunConfig c = parse_ok("[[phase]]\ntokens = 4000\nramp_from = 4\nglobal_batch = 16\n[[phase]]\nsteps = 2\n");
  auto s = PhaseSchedule::make(c);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  const PhaseSpan& r = s->phases()[0];
  int64_t tokens = 0;
  for (int64_t i = 0; i < r.steps; ++i) {
    EXPECT_LT(tokens, 4000) << "step " << i << " starts after the phase's tokens are trained";
    const int64_t b = r.batch_at(i);
    EXPECT_EQ(b % 4, 0);
    if (i > 0) {
      EXPECT_GE(b, r.batch_at(i - 1));
    }
    tokens += b * 64;
  }
  EXPECT_GE(tokens, 4000);
  EXPECT_EQ(s->phases()[1].global_batch, 4);  // batch_size x grad_accum
}

TEST(PhaseSchedule, ANewMixtureStartsANewDataSegment) {
  const RunConfig c = parse_ok(R"(
[data]
dataset = "/d"
mixture = "/m/main.toml"
[[phase]]
steps = 3
[[phase]]
steps = 4
[[phase]]
name = "anneal"
steps = 2
mixture = "/m/anneal.toml"
)");
  auto s = PhaseSchedule::make(c);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  ASSERT_EQ(s->segments().size(), 2u);
  EXPECT_EQ(s->segments()[0].phases, 2);
  EXPECT_EQ(s->segments()[0].sequences, 7 * 4);
  EXPECT_EQ(s->phases()[2].segment, 1);
  EXPECT_EQ(s->first_sequence(7), 0);  // the anneal segment reads its own schedule from its start
  EXPECT_EQ(s->first_sequence(8), 4);
  EXPECT_EQ(s->phases()[0].name, "phase 1");
}

TEST(PhaseSchedule, OnePhaseMayTakeTheRestOfTrainSteps) {
  const RunConfig c = parse_ok("steps = 30\n[[phase]]\nsteps = 5\n[[phase]]\nname = \"rest\"\n[[phase]]\nsteps = 4\n");
  auto s = PhaseSchedule::make(c);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_EQ(s->phases()[1].steps, 21);
  EXPECT_EQ(s->total_steps(), 30);
}

TEST(PhaseSchedule, RoundTripsThroughTheCanonicalToml) {
  const RunConfig c = parse_ok(kPhased);
  auto again = parse_run_config(to_toml(c), "test.toml", {});
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  EXPECT_EQ(to_toml(*again), to_toml(c));
  EXPECT_EQ(again->train.steps, 21);
}

TEST(PhaseSchedule, BadPhasesNameTheirKey) {
  EXPECT_THAT(parse_error("[[phase]]\nsteps = 3\nglobal_batch = 6\n"),
              HasSubstr("phase[0].global_batch: 6 sequences is not a multiple of train.batch_size = 4"));
  EXPECT_THAT(parse_error("[[phase]]\nsteps = 3\n[[phase]]\n[[phase]]\n"),
              HasSubstr("phase[1] and phase[2] both have no length"));
  EXPECT_THAT(parse_error("[[phase]]\nsteps = 3\nramp_from = 16\nglobal_batch = 8\n"),
              HasSubstr("phase[0].ramp_from: 16 sequences must be below the phase's global batch 8"));
  EXPECT_THAT(parse_error("steps = 10\n[[phase]]\nsteps = 3\n"),
              HasSubstr("train.steps: 10 steps, but the phases add up to 3"));
  EXPECT_THAT(parse_error("[[phase]]\nsteps = 3\n[[phase]]\n"), HasSubstr("phase[1].steps: the phase has no length"));
  EXPECT_THAT(parse_error("[[phase]]\nsteps = 3\ntokens = 100\n"),
              HasSubstr("phase[0].tokens: give the phase's length once"));
  EXPECT_THAT(parse_error("[[phase]]\nsteps = 3\nmixture = \"m.toml\"\n"),
              HasSubstr("phase[0].mixture: a phase's mixture needs data.dataset"));
  EXPECT_THAT(parse_error("[[phase]]\nsteps = 3\nlr = \"cool\"\n"), HasSubstr("phase[0].lr"));
  EXPECT_THAT(parse_error("[[phase]]\nsteps = 3\nseq_len = 128\n"),
              HasSubstr("phase[0].seq_len: a phase's own sequence length needs data.dataset"));
  EXPECT_THAT(parse_error("[data]\ndataset = \"/d\"\nmixture = \"/m.toml\"\n[[phase]]\nsteps = 3\nseq_len = 96\n",
                          {"model.routing_group=288"}),
              HasSubstr("phase[0].seq_len: the routing group of 288 tokens must divide batch_size x seq_len = 384"));
  EXPECT_THAT(parse_error("[data]\ndataset = \"/d\"\nmixture = \"/m.toml\"\n[[phase]]\nsteps = 3\nseq_len = 96\n",
                          {"model.routing_group=64"}),
              HasSubstr("phase[0].seq_len: 96 tokens: "));
}

TEST(PhaseSchedule, APhaseMayScaleRope) {
  const RunConfig c = parse_ok(R"(
[data]
dataset = "/d"
mixture = "/m.toml"
[[phase]]
steps = 3
[[phase]]
steps = 2
seq_len = 256
rope_scaling = "yarn"
rope_factor = 4.0
rope_original_len = 64
)");
  auto s = PhaseSchedule::make(c);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_EQ(s->phases()[0].model.rope_scaling, RopeScalingKind::kNone);
  const ModelConfig& m = s->phases()[1].model;
  EXPECT_EQ(m.rope_scaling, RopeScalingKind::kYarn);
  EXPECT_EQ(m.rope_factor, 4.0);
  EXPECT_EQ(m.rope_original_len, 64);
  EXPECT_THAT(parse_error("[[phase]]\nsteps = 3\nrope_scaling = \"yarn\"\nrope_factor = 2.0\n"),
              HasSubstr("phase[0].rope_scaling: "));
  EXPECT_THAT(parse_error("[[phase]]\nsteps = 3\nrope_factor = 0.5\n"), HasSubstr("phase[0].rope_factor"));
}

TEST(PhaseSchedule, StopAtTakesAStepOrAPhaseName) {
  auto s = PhaseSchedule::make(parse_ok(kPhased));
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(*s->stop_step("7"), 7);
  EXPECT_EQ(*s->stop_step("main"), 16);
  EXPECT_EQ(*s->stop_step("ramp"), 6);
  auto bad = s->stop_step("cooldown");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("\"anneal\" (ends at step 21)"));
}

}  // namespace
}  // namespace mt
