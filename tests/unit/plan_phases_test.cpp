// plan_phases_test.cpp — runs in phases ([[phase]] in a layout file): a
// ramp's levels and steps by hand and against the closed-form integral, a
// two-phase plan equal to the sum of two single plans, the strict loading
// of phase keys (typos name file, line and key), and the default of one
// phase equal to the plain plan.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "core/config_schema.h"
#include "plan/phases.h"
#include "plan/plan.h"

namespace mt::plan {
namespace {

using ::testing::HasSubstr;

ModelConfig moe() {
  ModelConfig m;
  m.vocab_size = 32768, m.d_model = 2048, m.n_layers = 16, m.n_heads = 16, m.n_kv_heads = 4;
  m.n_experts = 64, m.top_k = 4, m.d_expert = 1024, m.n_shared_experts = 1;
  m.tied_embeddings = false;
  return m;
}

ClusterConfig nvl72() {
  auto c = parse_cluster("[gpu]\ntype = \"GB200\"\n[topology]\nracks = 4\nspare_racks = 1\nsla_min_gpus_up = 64\n",
                         "nvl72.toml");
  EXPECT_TRUE(c.is_ok()) << c.status().message();
  return *c;
}

PlanInputs inputs(const std::string& layout_text) {
  PlanInputs in;
  in.model = moe();
  in.model_source = "moe";
  in.model_seq_len = 4096;
  in.cluster = nvl72();
  auto l = parse_layout(layout_text, "l.toml");
  EXPECT_TRUE(l.is_ok()) << l.status().message();
  if (l) in.layout = *l;
  in.tokens = 1e12;
  in.search = SearchMode::kNone;
  in.sweep_layouts = false;
  return in;
}

const char* kBase = "[parallel]\nep = 8\n[batch]\nglobal_batch = 768\n";

// From 2 to 8 sequences in steps of 2 over T tokens: B(t) = 2 + 6 t / T. Level 2 takes B in [2, 3) (T/6),
// 4 takes [3, 5) (T/3), 6 takes [5, 7) (T/3), 8 takes [7, 8] (T/6).
TEST(PlanPhases, RampLevelsByHand) {
  const double T = 6e6;
  const auto levels = ramp_levels(2, 8, 2, T, 100);
  ASSERT_EQ(levels.size(), 4u);
  const int64_t batch[] = {2, 4, 6, 8};
  const double share[] = {1.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 6};
  double steps = 0;
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(levels[i].global_batch, batch[i]);
    EXPECT_NEAR(levels[i].tokens, share[i] * T, 1e-6);
    EXPECT_NEAR(levels[i].steps, share[i] * T / (double(batch[i]) * 100), 1e-9);
    steps += levels[i].steps;
  }
  EXPECT_NEAR(steps, T / 100 * (1.0 / 12 + 1.0 / 12 + 1.0 / 18 + 1.0 / 48), 1e-6);
  // A start between levels: 3 rounds to 4 (ties go to the level above), and the first level starts at 3.
  const auto from3 = ramp_levels(3, 8, 2, T, 100);
  ASSERT_EQ(from3.size(), 3u);
  EXPECT_EQ(from3[0].global_batch, 4);
  EXPECT_NEAR(from3[0].tokens, T * 2 / 5, 1e-6);
}

// DeepSeek-V3's ramp, 3072 to 15360 sequences of 4096 tokens over 469B tokens: with a fine quantum the
// steps approach the integral of dt / B(t) = T ln(B1 / B0) / ((B1 - B0) seq).
TEST(PlanPhases, RampStepsApproachTheIntegral) {
  const double T = 469e9, seq = 4096;
  const double integral = T * std::log(15360.0 / 3072.0) / ((15360.0 - 3072.0) * seq);
  for (int64_t q : {16, 128}) {
    double steps = 0, tokens = 0;
    const auto levels = ramp_levels(3072, 15360, q, T, int64_t(seq));
    for (const RampLevel& r : levels) {
      EXPECT_EQ(r.global_batch % q, 0);
      steps += r.steps, tokens += r.tokens;
    }
    EXPECT_NEAR(tokens, T, 1e-6 * T);
    EXPECT_NEAR(steps, integral, 1e-3 * integral) << q;
    EXPECT_LE(int64_t(levels.size()), 256);
  }
  // More levels than allowed: the quantum grows, the levels stay multiples of it and end at the target.
  const auto coarse = ramp_levels(16, 16384, 16, 1e9, 1024, 64);
  EXPECT_LE(coarse.size(), 64u);
  EXPECT_EQ(coarse.back().global_batch, 16384);
  for (const RampLevel& r : coarse) EXPECT_EQ(r.global_batch % 16, 0);
}

// Two phases cost what the two single plans cost, step for step and day for day.
TEST(PlanPhases, TwoPhasesAreTheSumOfTwoPlans) {
  const std::string text = std::string(kBase) +
                           "[[phase]]\nname = \"short\"\ntokens = 2e11\nbatch.global_batch = 384\n"
                           "[[phase]]\nname = \"long\"\ntokens = 0\n[phase.batch]\nseq_len = 8192\nglobal_batch = 384\n";
  auto both = make_plan(inputs(text));
  ASSERT_TRUE(both.is_ok()) << both.status().message();
  ASSERT_EQ(both->phases.size(), 2u);
  PlanInputs a = inputs("[parallel]\nep = 8\n[batch]\nglobal_batch = 384\n");
  a.tokens = 2e11;
  PlanInputs b = inputs("[parallel]\nep = 8\n[batch]\nglobal_batch = 384\nseq_len = 8192\n");
  b.tokens = 8e11;
  auto pa = make_plan(a), pb = make_plan(b);
  ASSERT_TRUE(pa.is_ok() && pb.is_ok());
  EXPECT_EQ(both->phases[0].steps, pa->steps);
  EXPECT_EQ(both->phases[1].steps, pb->steps);
  EXPECT_EQ(both->steps, pa->steps + pb->steps);
  EXPECT_NEAR(both->days, pa->days + pb->days, 1e-9 * both->days);
  EXPECT_NEAR(both->gpu_hours, pa->gpu_hours + pb->gpu_hours, 1e-9 * both->gpu_hours);
  EXPECT_EQ(both->phases[1].par.seq_len, 8192);
  EXPECT_EQ(both->phases[1].par.global_batch, 384);
  EXPECT_EQ(both->phases[1].par.cfg.ep, 8);  // inherited
  // The main phase (most tokens) is described in detail; memory is the fullest phase's; MFU by tokens.
  EXPECT_EQ(both->totals.main, 1u);
  EXPECT_EQ(both->time.step_s, pb->time.step_s);
  EXPECT_NEAR(both->totals.memory_bytes, std::max(pa->mem.total(), pb->mem.total()), 1.0);
  EXPECT_NEAR(both->totals.mfu_by_tokens, (2e11 * pa->time.mfu + 8e11 * pb->time.mfu) / 1e12, 1e-12);
  const nlohmann::json j = to_json(*both);
  ASSERT_EQ(j["phases"].size(), 2u);
  EXPECT_EQ(j["phases"][1]["name"], "long");
  EXPECT_EQ(j["totals"]["steps"], pa->steps + pb->steps);
  EXPECT_EQ(j["mfu"].get<double>(), both->totals.mfu_by_tokens);
  EXPECT_THAT(to_text(*both), HasSubstr("Phases"));
  EXPECT_THAT(to_html(*both), HasSubstr("Training phases"));
}

// A ramp phase: steps are the sum of its levels' steps (each level timed at its own batch).
TEST(PlanPhases, RampPhaseStepsAndDays) {
  const std::string text = std::string(kBase) + "[[phase]]\nname = \"ramp\"\ntokens = 1e11\nramp_from = 192\n"
                                                "[[phase]]\nname = \"main\"\ntokens = 0\n";
  auto p = make_plan(inputs(text));
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const PhasePlan& r = p->phases[0];
  ASSERT_FALSE(r.ramp.empty());
  const int64_t q = r.par.dp * r.par.micro_batch;
  EXPECT_EQ(r.ramp.front().global_batch, 192);
  EXPECT_EQ(r.ramp.back().global_batch, 768);
  double steps = 0, days = 0;
  for (const RampLevel& lv : r.ramp) {
    EXPECT_EQ(lv.global_batch % q, 0);
    steps += lv.steps;
    days += lv.steps * lv.step_s / 86400;
  }
  EXPECT_EQ(r.steps, int64_t(std::ceil(steps)));
  EXPECT_NEAR(r.days, days, 1e-12);
  // dp = 192 GPUs: levels 192, 384, 576, 768 take 1/6, 1/3, 1/3, 1/6 of the tokens (B(t) rounded to the nearest).
  ASSERT_EQ(r.ramp.size(), 4u);
  EXPECT_EQ(q, 192);
  const double by_hand = 1e11 / 4096 * (1.0 / 6 / 192 + 1.0 / 3 / 384 + 1.0 / 3 / 576 + 1.0 / 6 / 768);
  EXPECT_NEAR(steps, by_hand, 1e-9 * by_hand);
  // Coarse levels: 5% above the integral of dt / B(t) (the smallest batch counts most).
  const double integral = 1e11 * std::log(768.0 / 192) / ((768.0 - 192) * 4096);
  EXPECT_NEAR(steps, integral, 0.06 * integral);
  // Smaller batches take more steps than the same tokens at the full batch.
  EXPECT_GT(r.steps, int64_t(std::ceil(1e11 / (768.0 * 4096))));
  EXPECT_THAT(to_text(*p), HasSubstr("192->768"));
}

TEST(PlanPhases, NoPhasesIsOnePhaseEqualToThePlan) {
  auto p = make_plan(inputs(kBase));
  ASSERT_TRUE(p.is_ok());
  ASSERT_EQ(p->phases.size(), 1u);
  EXPECT_EQ(p->steps, int64_t(std::ceil(1e12 / (768.0 * 4096))));
  EXPECT_EQ(p->phases[0].steps, p->steps);
  EXPECT_EQ(p->totals.mfu_by_tokens, p->time.mfu);
  EXPECT_EQ(p->totals.memory_bytes, p->mem.total());
  EXPECT_THAT(to_text(*p), ::testing::Not(HasSubstr("Phases")));
  EXPECT_EQ(to_json(*p)["phases"].size(), 1u);
}

TEST(PlanPhases, LoadingIsStrict) {
  auto err = [](const std::string& text) {
    auto l = parse_layout(std::string(kBase) + text, "l.toml");
    return l.is_ok() ? std::string("ok") : l.status().message();
  };
  // A misspelt key inside a phase: file, line, the full key and a suggestion.
  EXPECT_THAT(err("[[phase]]\ntokens = 1e9\nbatch.global_bach = 96\n"),
              HasSubstr("l.toml:7: phase[0].batch.global_bach: unknown key (did you mean 'phase[0].batch.global_batch'?)"));
  EXPECT_THAT(err("[[phase]]\ntokens = 1e9\nparallel.tp = 0\n"), HasSubstr("l.toml:7: phase[0].parallel.tp: expected"));
  EXPECT_THAT(err("[[phase]]\ntokens = -1\n"), HasSubstr("l.toml:6: phase[0].tokens"));
  EXPECT_THAT(err("[[phase]]\nramp_from = 768\n"), HasSubstr("phase[0].ramp_from: 768 sequences must be below"));
  EXPECT_THAT(err("[[phase]]\n[[phase]]\n"), HasSubstr("at most one phase may leave tokens = 0"));
  EXPECT_THAT(err("[[phase]]\ntokens = 1e9\nmemory.fp8_activations = true\n"),
              HasSubstr("phase[0].memory.fp8_activations: needs precision.gemm"));
  // Phase tokens must add up to the budget, and errors of a phase's layout name the phase.
  auto bad_sum = make_plan(inputs(std::string(kBase) + "[[phase]]\ntokens = 1e11\n"));
  ASSERT_FALSE(bad_sum.is_ok());
  EXPECT_THAT(bad_sum.status().message(), HasSubstr("phase tokens sum to 1e+11 but --tokens is 1e+12"));
  auto bad_tp = make_plan(inputs(std::string(kBase) + "[[phase]]\ntokens = 0\nparallel.tp = 3\n"));
  ASSERT_FALSE(bad_tp.is_ok());
  EXPECT_THAT(bad_tp.status().message(), HasSubstr("l.toml phase[0]: parallel.tp"));
}

// A phase inherits the layout (after --set overrides), and the resolved file written back reads the same.
TEST(PlanPhases, InheritanceAndRoundTrip) {
  const std::string text = std::string(kBase) + "[memory]\nrecompute = \"full\"\n"
                                                "[[phase]]\ntokens = 1e9\nbatch.seq_len = 8192\n";
  auto l = parse_layout(text, "l.toml", {"batch.micro_batch=2", "phase[0].parallel.tp=2"});
  ASSERT_TRUE(l.is_ok()) << l.status().message();
  ASSERT_EQ(l->phases.size(), 1u);
  const LayoutSettings& ph = l->phases[0].layout;
  EXPECT_EQ(ph.recompute, Recompute::kFull);
  EXPECT_EQ(ph.micro_batch, 2);
  EXPECT_EQ(ph.global_batch, 768);
  EXPECT_EQ(ph.seq_len, 8192);
  EXPECT_EQ(ph.tp, 2);
  EXPECT_EQ(l->tp, 1);
  LayoutConfig copy = *l;
  ConfigSchema s("layout file");
  declare_keys(s, copy);
  auto again = parse_layout(s.to_toml(), "again.toml");
  ASSERT_TRUE(again.is_ok()) << again.status().message() << "\n" << s.to_toml();
  ASSERT_EQ(again->phases.size(), 1u);
  EXPECT_EQ(again->phases[0].layout.seq_len, 8192);
  EXPECT_EQ(again->phases[0].layout.tp, 2);
  EXPECT_EQ(again->phases[0].tokens, 1e9);
  EXPECT_EQ(again->micro_batch, 2);
}

}  // namespace
}  // namespace mt::plan
