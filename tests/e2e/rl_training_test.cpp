// rl_training_test.cpp — `moetrain rl` through the real binary: a tiny
// pretrained run trained with GRPO on task items starts from its weights,
// records rollout and held-out figures per step; SIGKILL in the middle of
// an iteration (past its first pass, so the rollout buffer and the first
// pass's log-probabilities must come back from the checkpoint), then
// --resume, ends with the uninterrupted state hash, the reference's
// identity checked; bad input is refused naming what is wrong. `moetrain
// distill` runs the same loop toward a teacher: on-policy (reverse KL)
// resumed bit for bit, the teacher's identity recorded, the two off-policy
// baselines, and a teacher that reads text differently refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/e2e.h"

namespace mt {
namespace {

using ::testing::HasSubstr;
namespace e2e = mt::e2e;

class RlTraining : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new e2e::TempDir();
    const auto base = e2e::train({"--preset", "tiny-test", "--set", "train.steps=4", "--set", "train.seq_len=64",
                                  "--set", "train.threads=1", "--run-dir", dir() + "/base"});
    ASSERT_EQ(base.exit_code, 0) << base;
    const auto items = e2e::moetrain(
        {"tasks", "make", "copy", "--length", "4", "--split", "train", "--n", "40", "--out", dir() + "/items.jsonl"});
    ASSERT_EQ(items.exit_code, 0) << items;
    const auto held = e2e::moetrain(
        {"tasks", "make", "copy", "--length", "4", "--split", "held-out", "--n", "6", "--out", dir() + "/held.jsonl"});
    ASSERT_EQ(held.exit_code, 0) << held;
    // A teacher: the same tiny model trained further.
    const auto teacher = e2e::train({"--preset", "tiny-test", "--set", "train.steps=12", "--set", "train.seq_len=64",
                                     "--set", "train.threads=1", "--run-dir", dir() + "/teacher"});
    ASSERT_EQ(teacher.exit_code, 0) << teacher;
  }
  static void TearDownTestSuite() { delete tmp_; }
  static std::string dir() { return tmp_->path(); }
  // 6 steps: 3 iterations of 2 passes over 4 prompts x 4 completions, a KL term to the starting point.
  static std::vector<std::string> rl(const std::string& run, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {"rl",         "--no-progress",
                                  "--init",     dir() + "/base",
                                  "--tasks",    dir() + "/items.jsonl",
                                  "--held-out", dir() + "/held.jsonl",
                                  "--run-dir",  run,
                                  "--set",      "train.steps=6",
                                  "--set",      "rl.group_size=4",
                                  "--set",      "train.batch_size=16",
                                  "--set",      "rl.passes=2",
                                  "--set",      "rl.kl_beta=0.05",
                                  "--set",      "rl.max_new_tokens=8",
                                  "--set",      "rl.eval_k=2",
                                  "--set",      "train.eval_every=3",
                                  "--set",      "train.checkpoint_every=1",
                                  "--set",      "train.threads=1",
                                  "--set",      "rl.write_rollouts=true"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  static e2e::TempDir* tmp_;
};
e2e::TempDir* RlTraining::tmp_ = nullptr;

TEST_F(RlTraining, RecordsRolloutsAndResumesMidIterationBitForBit) {
  const std::string a = dir() + "/a";
  const auto whole = e2e::moetrain(rl(a), 300);
  ASSERT_EQ(whole.exit_code, 0) << whole;
  EXPECT_THAT(whole.err, HasSubstr("# init: weights of"));
  EXPECT_THAT(whole.err, HasSubstr("# rl: held-out pass@1"));
  const auto rows = e2e::read_metrics(a);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_TRUE(e2e::has_steps_1_to_n(rows, 6));
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    ASSERT_TRUE(r.contains("rl")) << r.dump();
    EXPECT_EQ(r["rl"]["iteration"].get<int64_t>(), int64_t(i / 2));
    EXPECT_EQ(r["rl"]["pass"].get<int64_t>(), int64_t(i % 2));
    EXPECT_GT(r["rl"]["policy_tokens"].get<int64_t>(), 0);
    EXPECT_GT(r["rl"]["response_len"].get<double>(), 0.0);
    EXPECT_GE(r["rl"]["reward"].get<double>(), 0.0);
    EXPECT_LE(r["rl"]["reward"].get<double>(), 1.0);
    EXPECT_GT(r["rl"]["entropy"].get<double>(), 0.0);
    if (i % 2 == 0) {
      EXPECT_EQ(r["rl"]["clip_frac"].get<double>(), 0.0) << "the first pass is on-policy: ratio 1";
    } else {  // the second pass saw the first's update: its KL to the reference is no longer 0
      EXPECT_GT(r["rl"]["kl"].get<double>(), 0.0) << r.dump();
    }
    // The rollouts of an iteration are its passes' both.
    if (i % 2 == 1) {
      EXPECT_EQ(r["rl"]["reward"], rows[i - 1]["rl"]["reward"]);
    }
  }
  EXPECT_TRUE(rows[2]["rl"].contains("eval")) << rows[2].dump();
  EXPECT_TRUE(rows[5]["rl"].contains("eval")) << rows[5].dump();
  EXPECT_EQ(rows[5]["rl"]["eval"]["items"].get<int64_t>(), 6);
  EXPECT_EQ(e2e::read_events(a, "rl_eval").size(), 1u) << "the evaluation at the start";
  EXPECT_THAT(e2e::read_file(a + "/config.toml"), HasSubstr("enabled = true"));

  // Killed in step 4 (iteration 1's second pass): resumed from step 3's
  // checkpoint, whose buffer holds iteration 1's rollouts and log-probabilities.
  const std::string b = dir() + "/b";
  const auto killed = e2e::moetrain(rl(b, {"--inject-fault", "kill:0:4"}), 300);
  ASSERT_EQ(killed.term_signal, SIGKILL) << killed;
  const auto resumed =
      e2e::moetrain({"rl", "--no-progress", "--resume", "--run-dir", b, "--set", "train.threads=1"}, 300);
  ASSERT_EQ(resumed.exit_code, 0) << resumed;
  EXPECT_THAT(resumed.err, HasSubstr("resumed from"));
  EXPECT_EQ(e2e::done_state_hash(resumed.err), e2e::done_state_hash(whole.err));
  const auto again = e2e::read_metrics(b);
  ASSERT_EQ(again.size(), 6u);
  EXPECT_EQ(again[3]["rl"]["reward"], rows[3]["rl"]["reward"]);
  EXPECT_EQ(again[3]["loss"], rows[3]["loss"]);
  // The rollout log too: the killed run's lines of the iteration generated after its checkpoint were dropped
  // on resume and written again, the same.
  // (Lines name their run; the rest of each line is the same.)
  auto rollouts_of = [](const std::string& run) {
    std::vector<nlohmann::json> v;
    std::istringstream in(e2e::read_file(run + "/rollouts.jsonl"));
    for (std::string line; std::getline(in, line);) {
      nlohmann::json j = nlohmann::json::parse(line);
      j.erase("id");
      j.erase("run");
      v.push_back(std::move(j));
    }
    return v;
  };
  const auto logged = rollouts_of(a), relogged = rollouts_of(b);
  EXPECT_EQ(logged.size(), 3u * 16u) << "3 iterations of 16 rollouts";
  EXPECT_TRUE(logged == relogged) << logged.size() << " lines, " << relogged.size() << " after the resume";
}

// One step stale (rl.rollout_lag = 1): iteration i's rollouts are sampled
// by the model at iteration i - 1's start, in the background while i - 1
// trains. Iteration 0 has no earlier model, so its rollouts are the
// on-policy run's; iteration 1's come from the unchanged starting model and
// so differ from the on-policy run's (sampled after two updates). The
// rollouts generated ahead are saved in checkpoints: killed in either pass
// of an iteration, the resumed run ends with the uninterrupted hash.
TEST_F(RlTraining, RollsOutOneStepStaleAndResumesBitForBit) {
  const std::vector<std::string> fast = {"--set", "train.lr=0.1"};  // updates large enough to change samples
  auto with = [&](std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  const std::vector<std::string> lag = with(fast, {"--set", "rl.rollout_lag=1"});
  const std::string on = dir() + "/lag0", stale = dir() + "/lag1";
  const auto r0 = e2e::moetrain(rl(on, fast), 300);
  ASSERT_EQ(r0.exit_code, 0) << r0;
  const auto r1 = e2e::moetrain(rl(stale, lag), 300);
  ASSERT_EQ(r1.exit_code, 0) << r1;
  const auto rows = e2e::read_metrics(stale);
  ASSERT_EQ(rows.size(), 6u);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i]["rl"]["rollout_age"].get<int64_t>(), i < 2 ? 0 : 1) << "step " << i + 1;
    if (i == 2 || i == 4) {
      EXPECT_GT(rows[i]["rl"]["rollout_ahead_s"].get<double>(), 0.0) << "generated in the background";
    }
  }
  auto completions = [](const std::string& run, int64_t iteration) {
    std::vector<std::string> v;
    std::istringstream in(e2e::read_file(run + "/rollouts.jsonl"));
    for (std::string line; std::getline(in, line);) {
      const nlohmann::json j = nlohmann::json::parse(line);
      if (j["iteration"].get<int64_t>() == iteration) v.push_back(j["text"].get<std::string>());
    }
    return v;
  };
  EXPECT_EQ(completions(stale, 0), completions(on, 0)) << "iteration 0: the same model, the same streams";
  ASSERT_EQ(completions(stale, 1).size(), 16u);
  EXPECT_NE(completions(stale, 1), completions(on, 1)) << "iteration 1: the starting model's samples, not the updated";

  for (const char* kill : {"kill:0:3", "kill:0:4"}) {
    SCOPED_TRACE(kill);
    const std::string b = dir() + "/lag1-" + std::string(kill).substr(7);
    const auto killed = e2e::moetrain(rl(b, with(lag, {"--inject-fault", kill})), 300);
    ASSERT_EQ(killed.term_signal, SIGKILL) << killed;
    const auto resumed =
        e2e::moetrain({"rl", "--no-progress", "--resume", "--run-dir", b, "--set", "train.threads=1"}, 300);
    ASSERT_EQ(resumed.exit_code, 0) << resumed;
    EXPECT_EQ(e2e::done_state_hash(resumed.err), e2e::done_state_hash(r1.err));
    EXPECT_EQ(e2e::read_metrics(b).back()["rl"]["rollout_age"].get<int64_t>(), 1);
  }
  // The teacher's samples never go stale: a lag with them is refused, naming the key.
  const auto refused = e2e::moetrain(
      {"distill", "--no-progress", "--init", dir() + "/base", "--teacher", dir() + "/teacher", "--mode", "sft",
       "--tasks", dir() + "/items.jsonl", "--run-dir", dir() + "/lag-sft", "--set", "rl.rollout_lag=1"},
      300);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr("rl.rollout_lag"));
}

// Rollouts back into data: `rl`'s rollout log is the JSONL `data build`
// ingests as rollouts; its documents carry their outcome tag first, fall in
// the family's bucket, and a mixture with that bucket plans a ledger.
TEST_F(RlTraining, RolloutsBuildIntoATaggedBucketThatAMixturePlans) {
  const std::string run = dir() + "/rollouts-run";
  const auto r = e2e::moetrain(rl(run, {"--set", "train.steps=4", "--set", "rl.passes=1"}), 300);
  ASSERT_EQ(r.exit_code, 0) << r;
  std::vector<nlohmann::json> lines;
  {
    std::istringstream in(e2e::read_file(run + "/rollouts.jsonl"));
    for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  }
  ASSERT_EQ(lines.size(), 4u * 16u) << "every rollout of 4 iterations of 16\n" << r;
  int64_t successes = 0;
  for (const auto& j : lines) {
    EXPECT_EQ(j["topic"], "copy");
    EXPECT_EQ(j["sampler"], "policy");
    EXPECT_TRUE(j["outcome"] == "success" || j["outcome"] == "failure") << j.dump();
    EXPECT_EQ(j["outcome"] == "success", j["reward"].get<double>() == 1.0) << j.dump();
    successes += j["outcome"] == "success" ? 1 : 0;
  }
  e2e::write_file(dir() + "/rollouts-data.toml", "[[input]]\npath = \"" + run +
                                                     "/rollouts.jsonl\"\nkind = \"rollouts\"\nquality = \"q0\"\n"
                                                     "[tokenizer]\nvocab_size = 1024\n[split]\neval_frac = 0.1\n"
                                                     "[dedup]\nnear = false\nexact = false\n");
  const auto built = e2e::moetrain(
      {"data", "build", "--config", dir() + "/rollouts-data.toml", "--out", dir() + "/rollouts-ds", "--quiet"});
  ASSERT_EQ(built.exit_code, 0) << built;
  const auto docs = e2e::moetrain({"data", "inspect", dir() + "/rollouts-ds", "--docs", "--json", "--no-heatmap"});
  ASSERT_EQ(docs.exit_code, 0) << docs;
  std::vector<nlohmann::json> listed;  // one JSON line per document
  {
    std::istringstream in(docs.out);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) listed.push_back(nlohmann::json::parse(line));
  }
  ASSERT_EQ(listed.size(), lines.size()) << "every rollout is a document (no dedup)";
  int64_t tagged_success = 0;
  for (const auto& d : listed) {
    EXPECT_EQ(d["bucket"], "copy/q0");
    const auto shown =
        e2e::moetrain({"data", "show", dir() + "/rollouts-ds", std::to_string(d["id"].get<int64_t>()), "--json"});
    ASSERT_EQ(shown.exit_code, 0) << shown;
    const auto j = nlohmann::json::parse(shown.out);
    // The source line's outcome is the document's first token.
    const int64_t line = j["line"].get<int64_t>();
    ASSERT_GE(line, 1);
    ASSERT_FALSE(j["specials"].empty()) << j.dump();
    EXPECT_EQ(j["specials"][0]["at"].get<int64_t>(), 0);
    const std::string want = lines[size_t(line - 1)]["outcome"] == "success" ? "<|success|>" : "<|failure|>";
    EXPECT_EQ(j["specials"][0]["piece"], want) << j.dump();
    // The document is the rollout's text (its prompt byte for byte; data build normalises a sampled
    // completion's control bytes: NUL removed, CR to LF).
    const std::string logged = lines[size_t(line - 1)]["text"].get<std::string>();
    const std::string prompt = logged.substr(0, logged.find("A:") + 2);
    EXPECT_EQ(j["text"].get<std::string>().substr(0, prompt.size()), prompt);
    tagged_success += want == "<|success|>" ? 1 : 0;
  }
  EXPECT_EQ(tagged_success, successes);
  e2e::write_file(dir() + "/rollouts-mix.toml", "total_tokens = 512\n[weights]\n\"copy/*\" = 1\n");
  const auto plan = e2e::moetrain(
      {"data", "plan", dir() + "/rollouts-ds", "--mixture", dir() + "/rollouts-mix.toml", "--seq-len", "16", "--json"});
  ASSERT_EQ(plan.exit_code, 0) << plan;
  const auto p = nlohmann::json::parse(plan.out);
  EXPECT_TRUE(p["ok"].get<bool>()) << plan.out;
  EXPECT_THAT(plan.out, HasSubstr("copy/q0"));
}

TEST_F(RlTraining, DistillsOnPolicyResumesBitForBitAndRunsTheBaselines) {
  auto distill = [&](const std::string& run, const std::string& mode, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {"distill",   "--no-progress",
                                  "--init",    dir() + "/base",
                                  "--teacher", dir() + "/teacher",
                                  "--mode",    mode,
                                  "--tasks",   dir() + "/items.jsonl",
                                  "--run-dir", run,
                                  "--set",     "train.steps=4",
                                  "--set",     "rl.group_size=2",
                                  "--set",     "train.batch_size=8",
                                  "--set",     "rl.max_new_tokens=8",
                                  "--set",     "train.checkpoint_every=1",
                                  "--set",     "train.threads=1"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const std::string a = dir() + "/opd";
  const auto whole = e2e::moetrain(distill(a, "on_policy"), 300);
  ASSERT_EQ(whole.exit_code, 0) << whole;
  EXPECT_THAT(whole.err, HasSubstr("# teacher: "));
  const auto start = e2e::read_events(a, "start");
  ASSERT_EQ(start.size(), 1u);
  EXPECT_THAT(start[0].value("teacher", ""), HasSubstr("parameters xxh64 ")) << start[0].dump();
  const auto rows = e2e::read_metrics(a);
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& r : rows) {
    EXPECT_GT(r["loss"].get<double>(), 0.0) << "the reverse KL of two different models";
    EXPECT_NEAR(r["rl"]["kl"].get<double>(), r["loss"].get<double>(), 0.05 * r["loss"].get<double>())
        << "the loss is the divergence's mean over the sampled tokens";
    EXPECT_GT(r["rl"]["entropy"].get<double>(), 0.0) << "the student's entropy at the sampled positions";
  }
  EXPECT_THAT(e2e::read_file(a + "/config.toml"), HasSubstr("objective = \"reverse_kl\""));

  const std::string b = dir() + "/opd-killed";
  const auto killed = e2e::moetrain(distill(b, "on_policy", {"--inject-fault", "kill:0:3"}), 300);
  ASSERT_EQ(killed.term_signal, SIGKILL) << killed;
  const auto resumed =
      e2e::moetrain({"distill", "--no-progress", "--resume", "--run-dir", b, "--set", "train.threads=1"}, 300);
  ASSERT_EQ(resumed.exit_code, 0) << resumed;
  EXPECT_EQ(e2e::done_state_hash(resumed.err), e2e::done_state_hash(whole.err));

  // The off-policy baselines learn from the teacher's samples.
  for (const char* mode : {"forward_kl", "sft"}) {
    const std::string run = dir() + "/" + mode;
    const auto r = e2e::moetrain(distill(run, mode), 300);
    ASSERT_EQ(r.exit_code, 0) << r;
    const auto m = e2e::read_metrics(run);
    ASSERT_EQ(m.size(), 4u) << mode;
    EXPECT_GT(m.back()["loss"].get<double>(), 0.0) << mode;
  }

  // A teacher of another vocabulary.
  const auto other = e2e::train({"--preset", "tiny-test", "--set", "train.steps=1", "--set", "model.vocab_size=384",
                                 "--set", "train.threads=1", "--run-dir", dir() + "/other-teacher"});
  ASSERT_EQ(other.exit_code, 0) << other;
  std::vector<std::string> bad = distill(dir() + "/bad-teacher", "on_policy");
  bad[5] = dir() + "/other-teacher";  // --teacher
  const auto refused = e2e::moetrain(bad);
  EXPECT_EQ(refused.exit_code, 1) << refused;
  EXPECT_THAT(refused.err, HasSubstr("rl.teacher"));
  EXPECT_THAT(refused.err, HasSubstr("vocab_size"));
}

// Items with an environment run as episodes: the run records the share of
// rollouts (and of held-out greedy episodes) that called a tool.
TEST_F(RlTraining, AgenticItemsRunAsEpisodesAndReportToolUse) {
  for (const char* split : {"train", "held-out"}) {
    const auto made =
        e2e::moetrain({"tasks", "make", "kv", "--digits", "2", "--split", split, "--n",
                       split == std::string("train") ? "20" : "4", "--out", dir() + "/kv-" + split + ".jsonl"});
    ASSERT_EQ(made.exit_code, 0) << made;
  }
  const std::string run = dir() + "/agentic";
  std::vector<std::string> a = rl(run, {"--set", "train.steps=2", "--set", "rl.passes=1"});
  a[5] = dir() + "/kv-train.jsonl";     // --tasks
  a[7] = dir() + "/kv-held-out.jsonl";  // --held-out
  const auto r = e2e::moetrain(a, 300);
  ASSERT_EQ(r.exit_code, 0) << r;
  const auto rows = e2e::read_metrics(run);
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) {
    ASSERT_TRUE(row["rl"].contains("tool_use")) << row.dump();
    EXPECT_GE(row["rl"]["tool_use"].get<double>(), 0.0);
    EXPECT_LE(row["rl"]["tool_use"].get<double>(), 1.0);
  }
  ASSERT_TRUE(rows.back()["rl"].contains("eval")) << rows.back()["rl"].dump() << r;
  EXPECT_TRUE(rows.back()["rl"]["eval"].contains("tool_use"));
  // `eval --tasks` runs agentic items as the same greedy episodes (the
  // environment answering, the goal judged): the run's last pass@1.
  const auto ev = e2e::moetrain({"eval", "--ckpt", run, "--tasks", dir() + "/kv-held-out.jsonl", "--no-held-out",
                                 "--no-progress", "--episode-tokens", "8", "--out", dir() + "/agentic-eval.json"});
  ASSERT_EQ(ev.exit_code, 0) << ev;
  const auto j = nlohmann::json::parse(e2e::read_file(dir() + "/agentic-eval.json"));
  ASSERT_TRUE(j.contains("tasks")) << j.dump();
  EXPECT_EQ(j["tasks"][0]["docs"].get<int64_t>(), 4);
  EXPECT_DOUBLE_EQ(j["tasks"][0]["acc"].get<double>(), rows.back()["rl"]["eval"]["pass1"].get<double>()) << j.dump();
}

TEST_F(RlTraining, BadInputIsRefusedNamingIt) {
  e2e::write_file(dir() + "/bad.jsonl",
                  "{\"id\": \"a\", \"family\": \"copy\", \"prompt\": \"x\", \"answer\": \"x\"}\n{\"id\": \"b\"}\n");
  std::vector<std::string> bad = rl(dir() + "/bad-run");
  bad[5] = dir() + "/bad.jsonl";  // --tasks
  const auto malformed = e2e::moetrain(bad);
  EXPECT_EQ(malformed.exit_code, 2) << malformed;
  EXPECT_THAT(malformed.err, HasSubstr("bad.jsonl:2"));
  EXPECT_FALSE(std::filesystem::exists(dir() + "/bad-run/checkpoints"));

  const auto group = e2e::moetrain(rl(dir() + "/group", {"--set", "rl.group_size=3"}));
  EXPECT_EQ(group.exit_code, 2) << group;
  EXPECT_THAT(group.err, HasSubstr("rl.group_size"));

  // A reference of another vocabulary.
  const auto other = e2e::train({"--preset", "tiny-test", "--set", "train.steps=1", "--set", "model.vocab_size=384",
                                 "--set", "train.threads=1", "--run-dir", dir() + "/other"});
  ASSERT_EQ(other.exit_code, 0) << other;
  const auto ref = e2e::moetrain(rl(dir() + "/ref", {"--set", "rl.reference=" + dir() + "/other"}));
  EXPECT_EQ(ref.exit_code, 1) << ref;
  EXPECT_THAT(ref.err, HasSubstr("rl.reference"));
  EXPECT_THAT(ref.err, HasSubstr("vocab_size"));

  const auto no_init = e2e::moetrain({"rl", "--tasks", dir() + "/items.jsonl", "--run-dir", dir() + "/x"});
  EXPECT_EQ(no_init.exit_code, 2) << no_init;
  EXPECT_THAT(no_init.err, HasSubstr("--init"));
}

}  // namespace
}  // namespace mt
