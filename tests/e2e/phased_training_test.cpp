// phased_training_test.cpp — a run in phases through the real binary: a
// batch ramp, a main phase and an annealing phase over its own mixture,
// trained from one config on a built dataset. Checked: each step's phase,
// batch and learning rate; the per-phase ledgers against `data plan`
// (exactly) and against the mixture weights (within a sequence or two);
// SIGKILL at and just after the phase boundaries, then --resume, ends with
// the uninterrupted state hash; --stop-at a phase's name; `moetrain plan`
// of the run config gives the trainer's steps and tokens per phase; a phase
// that would read documents twice is refused before step 1.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include <signal.h>

#include "support/data_fixtures.h"
#include "support/e2e.h"

namespace mt {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;
namespace td = testdata;
namespace e2e = mt::e2e;

using e2e::moetrain;

// Ramp 4 -> 16 sequences over 6 steps, 10 steps at 16, then 6 steps at 8
// decaying on a mixture that upweights the best quality level.
std::string run_config(const std::string& dir, const std::string& anneal = "anneal.toml") {
  return e2e::tiny_moe_model_toml() + R"(
[train]
batch_size = 4
seq_len = 64
lr = 0.003
checkpoint_every = 2
threads = 1
[data]
dataset = ")" +
         dir + R"(/ds"
mixture = ")" +
         dir + R"(/main.toml"
[[phase]]
name = "ramp"
steps = 6
ramp_from = 4
global_batch = 16
[[phase]]
name = "main"
steps = 10
global_batch = 16
[[phase]]
name = "anneal"
steps = 6
global_batch = 8
mixture = ")" +
         dir + "/" + anneal + R"("
lr = "decay"
)";
}

class PhasedTraining : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new e2e::TempDir();
    const std::string d = dir_->path();
    td::write_file(d + "/corpus.jsonl", td::labelled_jsonl({"web", "code", "math"}, 3, 40, 7, 60));
    td::write_file(d + "/data.toml", "[[input]]\npath = \"" + d +
                                         "/corpus.jsonl\"\n[tokenizer]\nvocab_size = 480\n"
                                         "[split]\neval_frac = 0.1\n");
    auto r = moetrain({"data", "build", "--config", d + "/data.toml", "--out", d + "/ds", "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r;
    td::write_file(d + "/main.toml", "total_tokens = " + std::to_string(220 * 64) + "\n");
    td::write_file(d + "/anneal.toml",
                   "total_tokens = " + std::to_string(48 * 64) + "\n[quality_weights]\nq0 = 0.2\nq1 = 1.0\nq2 = 4.0\n");
    // Everything on one small bucket: more than it holds once the main phase took its share.
    td::write_file(d + "/greedy.toml",
                   "total_tokens = " + std::to_string(100 * 64) + "\n[weights]\n\"math/q0\" = 1.0\n");
    td::write_file(d + "/run.toml", run_config(d));
    td::write_file(d + "/greedy-run.toml", run_config(d, "greedy.toml"));
    auto a = e2e::train({"--config", d + "/run.toml", "--run-dir", d + "/a"}, 300);
    ASSERT_EQ(a.exit_code, 0) << a;
    hash_ = new std::string(e2e::done_state_hash(a.err));
    ASSERT_FALSE(hash_->empty()) << a;
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete hash_;
  }
  static std::string dir() { return dir_->path(); }
  static e2e::TempDir* dir_;
  static std::string* hash_;  // the uninterrupted run's
};
e2e::TempDir* PhasedTraining::dir_ = nullptr;
std::string* PhasedTraining::hash_ = nullptr;

TEST_F(PhasedTraining, EveryStepRunsItsPhasesBatchAndLearningRate) {
  const auto rows = e2e::read_metrics(dir() + "/a");
  ASSERT_EQ(rows.size(), 22u);
  const int64_t ramp[] = {4, 8, 8, 12, 12, 16};
  for (int64_t s = 1; s <= 22; ++s) {
    const json& r = rows[size_t(s - 1)];
    ASSERT_EQ(r["step"], s);
    const std::string want = s <= 6 ? "ramp" : s <= 16 ? "main" : "anneal";
    EXPECT_EQ(r["phase"], want) << s;
    const int64_t batch = s <= 6 ? ramp[s - 1] : s <= 16 ? 16 : 8;
    EXPECT_EQ(r["tokens"], batch * 64) << s;
  }
  // The annealing phase decays linearly to lr x min_lr_ratio (0.1 by default).
  EXPECT_NEAR(rows[16]["lr"].get<double>(), 0.003 + (0.0003 - 0.003) / 6, 1e-12);
  EXPECT_NEAR(rows[21]["lr"].get<double>(), 0.0003, 1e-12);
  // Capacity drops (capacity_factor 1.0) by bucket sum to the step's drops, every step.
  int64_t dropped = 0;
  std::map<std::string, int64_t> by_bucket;
  for (const json& r : rows) {
    ASSERT_TRUE(r.contains("bucket_dropped")) << r;
    int64_t sum = 0;
    for (const auto& [name, n] : r["bucket_dropped"].items()) {
      sum += n.get<int64_t>();
      by_bucket[name] += n.get<int64_t>();
    }
    EXPECT_EQ(sum, r["dropped"].get<int64_t>()) << "step " << r["step"];
    dropped += sum;
  }
  EXPECT_GT(dropped, 0);
  for (const auto& [name, n] : rows.back()["bucket_dropped_total"].items())
    EXPECT_EQ(n.get<int64_t>(), by_bucket[name]) << name;
  // The report lists the phases and marks where each begins on its charts.
  const std::string html = e2e::read_file(dir() + "/a/report.html");
  EXPECT_THAT(html, HasSubstr(">Phases<"));
  EXPECT_THAT(html, HasSubstr(">7-16<"));    // main's steps in the table
  EXPECT_THAT(html, HasSubstr(">anneal<"));  // a boundary's label on the charts
  EXPECT_THAT(html, HasSubstr(">dropped assignments<"));
}

TEST_F(PhasedTraining, PhaseLedgersEqualThePlanAndFollowTheWeights) {
  auto plan = moetrain({"data", "plan", dir() + "/ds", "--config", dir() + "/run.toml", "--json"});
  ASSERT_EQ(plan.exit_code, 0) << plan;
  const json p = json::parse(plan.out);
  const auto ends = e2e::read_events(dir() + "/a", "phase_end");
  ASSERT_EQ(ends.size(), 3u);
  ASSERT_EQ(p["phases"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(ends[i]["phase"], p["phases"][i]["name"]);
    EXPECT_EQ(ends[i]["bucket_tokens"], p["phases"][i]["bucket_tokens"]) << "phase " << i;
    // Against the weights: within one sequence per bucket (two where the
    // phase starts inside its segment's schedule).
    const json& seg = p["segments"][p["phases"][i]["segment"].get<size_t>()];
    const double tokens = p["phases"][i]["tokens"].get<double>();
    int64_t sum = 0;
    for (const json& b : seg["buckets"]) {
      const int64_t got = p["phases"][i]["bucket_tokens"].value(b["name"].get<std::string>(), int64_t(0));
      sum += got;
      EXPECT_LE(std::abs(double(got) - b["weight"].get<double>() * tokens), i == 1 ? 128.0 : 64.0)
          << "phase " << i << " bucket " << b["name"];
    }
    EXPECT_EQ(sum, int64_t(tokens)) << "phase " << i;
  }
  // The annealing mixture upweights q2: its share of q2 is above the main phase's.
  auto share_q2 = [&](size_t i) {
    double q2 = 0, all = 0;
    for (const auto& [name, t] : p["phases"][i]["bucket_tokens"].items()) {
      all += t.get<double>();
      if (name.ends_with("/q2")) q2 += t.get<double>();
    }
    return q2 / all;
  };
  EXPECT_GT(share_q2(2), share_q2(1) + 0.2);
  // One pool: the anneal segment's plan starts each bucket after what the main segment takes.
  for (const json& b : p["segments"][1]["buckets"]) EXPECT_GT(b["tokens_before"].get<int64_t>(), 0) << b;
}

TEST_F(PhasedTraining, KilledAtAndJustAfterPhaseBoundariesResumesBitForBit) {
  // Checkpoints every 2 steps: the boundaries (after steps 6 and 16) are
  // checkpoints. The kill fires as a step begins: at 7 the run resumes from
  // the boundary's checkpoint into the main phase, at 8 from inside it, at
  // 17 into the annealing mixture, at 19 from inside it.
  const std::string b = dir() + "/b";
  const std::vector<std::string> base = {"--config", dir() + "/run.toml", "--run-dir", b};
  int64_t resumed = -1;
  for (const char* kill_at : {"7", "8", "17", "19"}) {
    std::vector<std::string> args = base;
    if (resumed >= 0) args.push_back("--resume");
    args.insert(args.end(), {"--inject-fault", std::string("kill:0:") + kill_at});
    const auto r = e2e::train(args, 300);
    ASSERT_EQ(r.term_signal, SIGKILL) << r;
    resumed = 1;
  }
  std::vector<std::string> args = base;
  args.push_back("--resume");
  const auto r = e2e::train(args, 300);
  ASSERT_EQ(r.exit_code, 0) << r;
  // Checkpoints commit a step after they are taken: step 18's is not yet when 19 begins.
  EXPECT_EQ(e2e::resumed_from(r.err).second, 16) << r;
  EXPECT_EQ(e2e::done_state_hash(r.err), *hash_);
  // The resumed run's phase ends were logged once each at the steps the plan puts them.
  std::map<int64_t, int> ends;
  for (const json& e : e2e::read_events(b, "phase_end")) ++ends[e["step"].get<int64_t>()];
  EXPECT_TRUE(ends.count(6) && ends.count(16) && ends.count(22)) << ::testing::PrintToString(ends);
}

TEST_F(PhasedTraining, StopAtAPhaseEndsThereAndResumesToTheSameRun) {
  const std::string c = dir() + "/c";
  const auto stop = e2e::train({"--config", dir() + "/run.toml", "--run-dir", c, "--stop-at", "main"}, 300);
  ASSERT_EQ(stop.exit_code, 0) << stop;
  EXPECT_THAT(stop.err, HasSubstr("stopped at step 16 of 22"));
  EXPECT_TRUE(std::filesystem::exists(e2e::ckpt_dir(c, 16)));
  const auto rest = e2e::train({"--config", dir() + "/run.toml", "--run-dir", c, "--resume"}, 300);
  ASSERT_EQ(rest.exit_code, 0) << rest;
  EXPECT_EQ(e2e::done_state_hash(rest.err), *hash_);
  const auto bad = e2e::train({"--config", dir() + "/run.toml", "--run-dir", dir() + "/c2", "--stop-at", "cool"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("\"anneal\" (ends at step 22)"));
}

TEST_F(PhasedTraining, PlanOfTheRunConfigGivesTheTrainersStepsAndTokens) {
  auto r = moetrain({"plan", "--model", dir() + "/run.toml", "--cluster", "cpu", "--layout", "cpu", "--set",
                     "layout.batch.micro_batch=4", "--json", "--no-sweep", "--search", "none"});
  ASSERT_EQ(r.exit_code, 0) << r;
  const json j = json::parse(r.out);
  const auto rows = e2e::read_metrics(dir() + "/a");
  std::map<std::string, std::pair<int64_t, int64_t>> trained;  // phase -> (steps, tokens)
  for (const json& row : rows) {
    auto& [steps, tokens] = trained[row["phase"].get<std::string>()];
    ++steps;
    tokens += row["tokens"].get<int64_t>();
  }
  ASSERT_EQ(j["phases"].size(), 3u) << j.dump();
  int64_t steps = 0;
  for (const json& ph : j["phases"]) {
    const auto& [want_steps, want_tokens] = trained[ph["name"].get<std::string>()];
    EXPECT_EQ(ph["steps"].get<int64_t>(), want_steps) << ph;
    EXPECT_EQ(int64_t(ph["tokens"].get<double>()), want_tokens) << ph;
    steps += want_steps;
  }
  EXPECT_EQ(j["totals"]["steps"].get<int64_t>(), steps);
  auto wrong = moetrain({"plan", "--model", dir() + "/run.toml", "--cluster", "cpu", "--layout", "cpu", "--set",
                         "layout.batch.micro_batch=4", "--tokens", "1M"});
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_THAT(wrong.err, HasSubstr("leave --tokens out"));
}

TEST_F(PhasedTraining, APhaseThatWouldReadDocumentsTwiceIsRefusedBeforeStepOne) {
  const auto r = e2e::train({"--config", dir() + "/greedy-run.toml", "--run-dir", dir() + "/g"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("phase[2] \"anneal\""));
  EXPECT_THAT(r.err, HasSubstr("bucket math/q0 needs"));
  EXPECT_FALSE(std::filesystem::exists(dir() + "/g/metrics.jsonl"));
  auto plan = moetrain({"data", "plan", dir() + "/ds", "--config", dir() + "/greedy-run.toml"});
  EXPECT_EQ(plan.exit_code, 3) << plan;
  EXPECT_THAT(plan.err, HasSubstr("phase[2] \"anneal\""));
}

// A context extension: a phase of longer sequences with a higher RoPE base,
// reading its own data segment; resumable inside it bit for bit.
TEST_F(PhasedTraining, ALongerContextPhaseRunsItsLengthAndResumes) {
  const std::string d = dir();
  auto config = [&](const std::string& rope) {
    std::string c = run_config(d);
    c = c.substr(0, c.find("[[phase]]"));
    return c +
           "[[phase]]\nname = \"short\"\nsteps = 8\nglobal_batch = 8\n[[phase]]\nname = \"long\"\nsteps = 6\n"
           "global_batch = 8\nseq_len = 128\n" +
           rope;
  };
  td::write_file(d + "/long.toml", config("rope_theta = 40000.0\n"));
  td::write_file(d + "/long-same-rope.toml", config(""));
  const auto a = e2e::train({"--config", d + "/long.toml", "--run-dir", d + "/long-a"}, 300);
  ASSERT_EQ(a.exit_code, 0) << a;
  const auto rows = e2e::read_metrics(d + "/long-a");
  ASSERT_EQ(rows.size(), 14u);
  for (const json& r : rows) EXPECT_EQ(r["tokens"], r["step"].get<int64_t>() <= 8 ? 8 * 64 : 8 * 128) << r["step"];
  auto plan = moetrain({"data", "plan", d + "/ds", "--config", d + "/long.toml", "--json"});
  ASSERT_EQ(plan.exit_code, 0) << plan;
  const json p = json::parse(plan.out);
  ASSERT_EQ(p["segments"].size(), 2u);  // a new length reads a segment of its own
  EXPECT_EQ(p["phases"][1]["seq_len"], 128);
  // Killed inside the long phase (its first checkpoint is the boundary's), resumed: the same run.
  const auto killed =
      e2e::train({"--config", d + "/long.toml", "--run-dir", d + "/long-b", "--inject-fault", "kill:0:11"}, 300);
  ASSERT_EQ(killed.term_signal, SIGKILL) << killed;
  const auto resumed = e2e::train({"--config", d + "/long.toml", "--run-dir", d + "/long-b", "--resume"}, 300);
  ASSERT_EQ(resumed.exit_code, 0) << resumed;
  EXPECT_EQ(e2e::done_state_hash(resumed.err), e2e::done_state_hash(a.err));
  // The resumed start (inside the long phase, whose model is built anew) reports the same parameters.
  auto params_line = [](const std::string& err) {
    const size_t at = err.find("# parameters: ");
    return at == std::string::npos ? std::string() : err.substr(at, err.find(" (", at) - at);
  };
  EXPECT_NE(params_line(a.err), "");
  EXPECT_EQ(params_line(resumed.err), params_line(a.err));
  // eval reads the model as its last phase left it: sequences of 128.
  const auto ev = moetrain({"eval", "--ckpt", d + "/long-a", "--batches", "1", "--no-progress"});
  ASSERT_EQ(ev.exit_code, 0) << ev;
  EXPECT_THAT(ev.out, HasSubstr("sequences of 128 tokens"));
  // The short phase's model scored in windows of the long phase's length:
  // extrapolation, so only when asked (--past-seq-len); shorter windows need nothing.
  const auto stopped =
      e2e::train({"--config", d + "/long.toml", "--run-dir", d + "/long-short", "--stop-at", "short"}, 300);
  ASSERT_EQ(stopped.exit_code, 0) << stopped;
  const std::string short_ckpt = d + "/long-short";
  const auto past = moetrain({"eval", "--ckpt", short_ckpt, "--batches", "1", "--no-progress", "--seq-len", "128"});
  EXPECT_NE(past.exit_code, 0);
  EXPECT_THAT(past.err, HasSubstr("--seq-len 128 is past the 64 tokens"));
  EXPECT_THAT(past.err, HasSubstr("--past-seq-len"));
  const auto longer = moetrain({"eval", "--ckpt", short_ckpt, "--batches", "1", "--no-progress", "--seq-len", "128",
                                "--past-seq-len", "--out", d + "/past.json"});
  ASSERT_EQ(longer.exit_code, 0) << longer;
  EXPECT_THAT(longer.out, HasSubstr("sequences of 128 tokens"));
  EXPECT_EQ(json::parse(e2e::read_file(d + "/past.json"))["held_out"]["seq_len"], 128);
  const auto shorter = moetrain({"eval", "--ckpt", short_ckpt, "--batches", "1", "--no-progress", "--seq-len", "32"});
  ASSERT_EQ(shorter.exit_code, 0) << shorter;
  EXPECT_THAT(shorter.out, HasSubstr("sequences of 32 tokens"));
  // --positions: the loss by position in bins that double, which together
  // average to the held-out loss (every bucket scores as many sequences).
  const auto pos = moetrain({"eval", "--ckpt", d + "/long-a", "--batches", "1", "--no-progress", "--positions", "--out",
                             d + "/positions.json", "--plot", d + "/positions.svg"});
  ASSERT_EQ(pos.exit_code, 0) << pos;
  EXPECT_THAT(pos.out, HasSubstr("held-out loss by position"));
  // ... and the same tokens with halving context (train/context_loss.h): windows
  // of 128, lengths 128 down to 128 / 16 = 8, each window's last 4 tokens.
  EXPECT_THAT(pos.out, HasSubstr("held-out loss of the same tokens by context"));
  const json ctx = json::parse(e2e::read_file(d + "/positions.json"))["held_out"]["context_loss"];
  ASSERT_EQ(ctx["lengths"].size(), 5u) << ctx.dump();
  EXPECT_EQ(ctx["lengths"][0]["context"], 128);
  EXPECT_EQ(ctx["lengths"][4]["context"], 8);
  EXPECT_EQ(ctx["scored_per_window"], 4);
  EXPECT_GT(ctx["windows"].get<int64_t>(), 0);
  EXPECT_TRUE(ctx["lengths"][0].contains("gain_se"));
  const auto too_long = moetrain(
      {"eval", "--ckpt", d + "/long-a", "--batches", "1", "--no-progress", "--positions", "--context-min", "100"});
  EXPECT_EQ(too_long.exit_code, 2) << too_long;
  EXPECT_THAT(too_long.err, HasSubstr("--context-min 100: windows of 128 tokens hold no two lengths"));
  // --plot: one line over every bucket and one per bucket, the trained length marked.
  const std::string svg = e2e::read_file(d + "/positions.svg");
  EXPECT_THAT(svg, HasSubstr("<svg"));
  EXPECT_THAT(svg, HasSubstr("all buckets"));
  EXPECT_THAT(svg, HasSubstr("trained length"));
  EXPECT_GE(std::count(svg.begin(), svg.end(), 'M'), 2) << "the overall line and at least one bucket's";
  const auto no_positions = moetrain({"eval", "--ckpt", d + "/long-a", "--plot", d + "/p.svg"});
  EXPECT_NE(no_positions.exit_code, 0);
  EXPECT_THAT(no_positions.err, HasSubstr("--positions"));
  const json h = json::parse(e2e::read_file(d + "/positions.json"))["held_out"];
  int64_t next = 1, tokens = 0;
  double weighted = 0;
  for (const json& b : h["position_loss"]) {
    EXPECT_EQ(b["from"], next);
    next = b["to"].get<int64_t>() + 1;
    tokens += b["tokens"].get<int64_t>();
    weighted += b["loss"].get<double>() * b["tokens"].get<double>();
  }
  EXPECT_EQ(next, 129);
  EXPECT_EQ(tokens, h["buckets"].size() * h["sequences_per_bucket"].get<int64_t>() * 128);
  EXPECT_NEAR(weighted / double(tokens), h["eval_loss"].get<double>(), 1e-9 * h["eval_loss"].get<double>());
  EXPECT_EQ(h["bucket_position_loss"].size(), h["buckets"].size());
  // The RoPE base is the phase's: the same run at the model's base differs.
  const auto same = e2e::train({"--config", d + "/long-same-rope.toml", "--run-dir", d + "/long-c"}, 300);
  ASSERT_EQ(same.exit_code, 0) << same;
  EXPECT_NE(e2e::done_state_hash(same.err), e2e::done_state_hash(a.err));
}

// A branch at a phase's end may choose the phases not yet begun (a context
// extension tried with two RoPE settings from one base run): stopped at the
// end of "short" with RoPE unchanged in "long", branched (`ckpt branch`) and
// resumed with YaRN there, it ends where the YaRN run from the start ends.
// A change to a phase already begun, or to the next phase from a checkpoint
// inside it, is refused.
TEST_F(PhasedTraining, ABranchAtAPhaseEndMayChangeThePhasesNotYetBegun) {
  const std::string d = dir();
  std::string base = run_config(d);
  base = base.substr(0, base.find("[[phase]]"));
  const std::string phases =
      "[[phase]]\nname = \"short\"\nsteps = 4\nglobal_batch = 8\n[[phase]]\nname = \"long\"\n"
      "steps = 4\nglobal_batch = 8\nseq_len = 128\n";
  td::write_file(d + "/branch-a.toml", base + phases);
  td::write_file(d + "/branch-b.toml",
                 base + phases + "rope_scaling = \"yarn\"\nrope_factor = 2.0\nrope_original_len = 64\n");
  const auto b = e2e::train({"--config", d + "/branch-b.toml", "--run-dir", d + "/branch-full"}, 300);
  ASSERT_EQ(b.exit_code, 0) << b;
  const auto stop =
      e2e::train({"--config", d + "/branch-a.toml", "--run-dir", d + "/branch-a", "--stop-at", "short"}, 300);
  ASSERT_EQ(stop.exit_code, 0) << stop;
  auto branch = [&](const std::string& name, int64_t step) {
    const std::string to = d + "/" + name;
    const auto r = e2e::moetrain({"ckpt", "branch", e2e::ckpt_dir(d + "/branch-a", step), to});
    EXPECT_EQ(r.exit_code, 0) << r;
    return to;
  };
  const auto yarn =
      e2e::train({"--config", d + "/branch-b.toml", "--run-dir", branch("branch-yarn", 4), "--resume"}, 300);
  ASSERT_EQ(yarn.exit_code, 0) << yarn;
  EXPECT_EQ(e2e::done_state_hash(yarn.err), e2e::done_state_hash(b.err));
  // The begun phase changed: refused, naming the key.
  td::write_file(d + "/branch-c.toml", base + phases.substr(0, phases.find("[[phase]]", 5)) + "z_loss_coef = 0.01\n" +
                                           phases.substr(phases.find("[[phase]]", 5)));
  const auto begun = e2e::train({"--config", d + "/branch-c.toml", "--run-dir", branch("branch-c", 4), "--resume"});
  EXPECT_NE(begun.exit_code, 0);
  EXPECT_THAT(begun.err, HasSubstr("phase.0.z_loss_coef"));
  // Inside the long phase it has begun: its RoPE can no longer change.
  const auto rest =
      e2e::train({"--config", d + "/branch-a.toml", "--run-dir", d + "/branch-a", "--resume", "--stop-at", "6"}, 300);
  ASSERT_EQ(rest.exit_code, 0) << rest;
  const auto inside = e2e::train({"--config", d + "/branch-b.toml", "--run-dir", branch("branch-d", 6), "--resume"});
  EXPECT_NE(inside.exit_code, 0);
  EXPECT_THAT(inside.err, HasSubstr("phase.1.rope_scaling"));
}

// A phase's loss weights apply from its first step: the model's own value
// written out changes nothing, another value changes the run.
TEST(PhaseLossWeights, ApplyFromThePhasesFirstStep) {
  e2e::TempDir tmp;
  auto run = [&](const std::string& name, const std::string& second_phase) {
    td::write_file(tmp / (name + ".toml"),
                   e2e::tiny_moe_model_toml(320) +
                       "[train]\nbatch_size = 4\nseq_len = 64\nthreads = 1\n[[phase]]\nsteps = 3\n[[phase]]\n"
                       "steps = 3\n" +
                       second_phase);
    auto r = e2e::train({"--config", tmp / (name + ".toml"), "--run-dir", tmp / name});
    EXPECT_EQ(r.exit_code, 0) << r;
    return e2e::done_state_hash(r.err);
  };
  const std::string plain = run("plain", ""), same = run("same", "aux_loss_coef = 0.01\nz_loss_coef = 0.001\n");
  const std::string other = run("other", "aux_loss_coef = 0.5\n");
  EXPECT_FALSE(plain.empty());
  EXPECT_EQ(plain, same);
  EXPECT_NE(plain, other);
}

}  // namespace
}  // namespace mt
