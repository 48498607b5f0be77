// post_training_mpi_test.cpp — `moetrain distill`, `rl` and `sft` under
// `mpirun -np 2` (FSDP) and `-np 4` (FSDP x EP) against one process. The
// ranks split the rollouts and exchange them, and each samples its share on
// the rollouts' own Philox streams from the whole model (gathered), so every
// step trains on the same rollouts as one process: the same rewards and
// response lengths, and losses within 1e-5 relative (the layouts differ only
// in summation order, as distributed_training_test.cpp allows).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "support/e2e.h"
#include "support/mpi.h"

namespace mt::e2e {
namespace {

class PostTrainingMpi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new TempDir();
    const std::string d = tmp_->path();
    for (const auto& [name, steps] : {std::pair{"base", "4"}, std::pair{"teacher", "12"}}) {
      const auto r = train({"--preset", "tiny-test", "--set", std::string("train.steps=") + steps, "--set",
                            "train.seq_len=64", "--set", "train.threads=1", "--run-dir", d + "/" + name});
      ASSERT_EQ(r.exit_code, 0) << r;
    }
    const auto items = moetrain(
        {"tasks", "make", "copy", "--length", "4", "--split", "train", "--n", "40", "--out", d + "/items.jsonl"});
    ASSERT_EQ(items.exit_code, 0) << items;
  }
  static void TearDownTestSuite() { delete tmp_; }
  static std::string dir() { return tmp_->path(); }
  static std::vector<std::string> args(const std::string& cmd, const std::string& run) {
    std::vector<std::string> a = {moetrain_binary(),
                                  cmd,
                                  "--no-progress",
                                  "--init",
                                  dir() + "/base",
                                  "--tasks",
                                  dir() + "/items.jsonl",
                                  "--run-dir",
                                  run,
                                  "--set",
                                  "train.steps=3",
                                  "--set",
                                  "rl.group_size=2",
                                  "--set",
                                  "train.batch_size=8",
                                  "--set",
                                  "rl.max_new_tokens=6",
                                  "--set",
                                  "train.threads=1"};
    if (cmd == "distill")
      a.insert(a.end(), {"--teacher", dir() + "/teacher"});
    else
      a.insert(a.end(), {"--set", "rl.passes=2", "--set", "rl.kl_beta=0.1"});
    return a;
  }
  static void expect_same_steps(const std::string& one, const std::string& many, const ProcessResult& r) {
    const auto a = read_metrics(one), b = read_metrics(many);
    ASSERT_EQ(a.size(), 3u);
    ASSERT_EQ(b.size(), 3u) << r;
    for (size_t i = 0; i < a.size(); ++i) {
      SCOPED_TRACE("step " + std::to_string(i + 1));
      EXPECT_EQ(b[i]["rl"]["reward"], a[i]["rl"]["reward"]);
      EXPECT_EQ(b[i]["rl"]["response_len"], a[i]["rl"]["response_len"]);
      EXPECT_EQ(b[i]["rl"]["policy_tokens"], a[i]["rl"]["policy_tokens"]);
      const double la = a[i]["loss"].get<double>(), lb = b[i]["loss"].get<double>();
      EXPECT_LE(std::fabs(la - lb), 1e-5 * std::max(1e-3, std::fabs(la))) << la << " vs " << lb;
    }
  }
  static TempDir* tmp_;
};
TempDir* PostTrainingMpi::tmp_ = nullptr;

TEST_F(PostTrainingMpi, DistillAtTwoAndFourRanksMatchesOneProcess) {
  const std::string one = dir() + "/d1";
  auto a1 = args("distill", one);
  const ProcessResult r1 = run_process(a1, 300);
  ASSERT_EQ(r1.exit_code, 0) << r1;
  EXPECT_GT(read_metrics(one)[0]["loss"].get<double>(), 0.0) << "the KL of two different models";
  const std::string two = dir() + "/d2";
  const ProcessResult r2 = mpirun(2, args("distill", two), 300);
  ASSERT_EQ(r2.exit_code, 0) << r2;
  expect_same_steps(one, two, r2);
  // The teacher is sharded like the student (rl.frozen_layout = "sharded"):
  // each rank holds part of it, and its scores are those of the whole.
  const auto layout = [](const std::string& run) {
    const auto s = read_events(run, "start");
    return s.empty() ? std::string() : s.back().value("teacher_layout", "");
  };
  EXPECT_EQ(layout(one), "whole");
  EXPECT_NE(layout(two).find("sharded ep 1 x fsdp 2"), std::string::npos) << layout(two);
  // np 4 with EP, and a whole copy on every rank at np 2: the same scores.
  for (const auto& [np, run, set, want] :
       {std::tuple{4, dir() + "/d4", std::string("dist.ep=2"), std::string("sharded ep 2 x fsdp 2")},
        std::tuple{2, dir() + "/d2w", std::string("rl.frozen_layout=replicated"),
                   std::string("whole on every rank")}}) {
    auto argv = args("distill", run);
    argv.insert(argv.end(), {"--set", set});
    const ProcessResult r = mpirun(np, argv, 300);
    ASSERT_EQ(r.exit_code, 0) << r;
    expect_same_steps(one, run, r);
    EXPECT_NE(layout(run).find(want), std::string::npos) << layout(run);
  }
}

TEST_F(PostTrainingMpi, RlAtTwoAndFourRanksMatchesOneProcess) {
  const std::string one = dir() + "/r1";
  const ProcessResult r1 = run_process(args("rl", one), 300);
  ASSERT_EQ(r1.exit_code, 0) << r1;
  const std::string two = dir() + "/r2";
  const ProcessResult r2 = mpirun(2, args("rl", two), 300);
  ASSERT_EQ(r2.exit_code, 0) << r2;
  expect_same_steps(one, two, r2);
  const std::string four = dir() + "/r4";
  auto a4 = args("rl", four);
  a4.insert(a4.end(), {"--set", "dist.ep=2"});
  const ProcessResult r4 = mpirun(4, a4, 300);
  ASSERT_EQ(r4.exit_code, 0) << r4;
  expect_same_steps(one, four, r4);
  // The second pass over a batch trained against the reference: a KL the ranks agree on.
  const auto a = read_metrics(one), b = read_metrics(two);
  EXPECT_GT(a[1]["rl"]["kl"].get<double>(), 0.0);
  EXPECT_NEAR(b[1]["rl"]["kl"].get<double>(), a[1]["rl"]["kl"].get<double>(), 1e-4 * a[1]["rl"]["kl"].get<double>());
}

// An RL run is a training run (its config.toml holds every key), so
// `moetrain supervise` keeps one going: rank 1 killed at step 5 (an
// iteration's second pass, rollouts generated one step ahead), relaunched
// from the newest checkpoint on the spare host, it ends with the bits of the
// uninterrupted run at np 2.
TEST_F(PostTrainingMpi, RlUnderSuperviseSurvivesAKilledRank) {
  auto a = args("rl", dir() + "/sv-config");
  a.insert(a.end(), {"--set", "rl.rollout_lag=1"});
  a[std::find(a.begin(), a.end(), "train.steps=3") - a.begin()] = "train.steps=1";
  const ProcessResult made = run_process(a, 300);
  ASSERT_EQ(made.exit_code, 0) << made;
  const std::string config = dir() + "/sv-config/config.toml";
  const std::vector<std::string> train = {"--config",      config,  "--set",
                                          "train.steps=8", "--set", "train.checkpoint_every=2"};
  write_file(dir() + "/hosts", "n0\nn1\nn2\n");
  std::vector<std::string> sv = {
      moetrain_binary(), "supervise", "--hosts", dir() + "/hosts", "--run-dir", dir() + "/sv", "--local",
      "--spares",        "1",         "--"};
  sv.insert(sv.end(), train.begin(), train.end());
  sv.insert(sv.end(), {"--inject-fault", "kill:1:5"});
  const ProcessResult r = run_process(sv, 300);
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.err.find("finished at step 8"), std::string::npos) << r;
  EXPECT_NE(read_file(dir() + "/sv/events.jsonl").find("\"failure\""), std::string::npos);
  std::string last;
  for (const std::string& f : list_dir(dir() + "/sv/supervisor"))
    if (f.starts_with("launch_")) last = f;
  ASSERT_NE(last, "launch_000.log") << "relaunched after the kill";
  std::vector<std::string> ref = train;
  ref.insert(ref.end(), {"--run-dir", dir() + "/sv-ref"});
  const ProcessResult whole = mpi_train(2, ref, 300);
  ASSERT_EQ(whole.exit_code, 0) << whole;
  EXPECT_EQ(done_state_hash(read_file(dir() + "/sv/supervisor/" + last)), done_state_hash(whole.err));
  EXPECT_EQ(read_metrics(dir() + "/sv").back()["rl"]["rollout_age"].get<int64_t>(), 1);
}

// Supervised fine-tuning is the trainer's own loop on packed examples: per
// step the same loss at np 2 (FSDP) and np 4 (FSDP x EP) as in one process.
TEST_F(PostTrainingMpi, SftAtTwoAndFourRanksMatchesOneProcess) {
  auto sft = [&](const std::string& run) {
    return std::vector<std::string>{moetrain_binary(),
                                    "sft",
                                    "--no-progress",
                                    "--init",
                                    dir() + "/base",
                                    "--data",
                                    dir() + "/items.jsonl",
                                    "--run-dir",
                                    run,
                                    "--set",
                                    "train.steps=3",
                                    "--set",
                                    "train.batch_size=4",
                                    "--set",
                                    "train.threads=1"};
  };
  const ProcessResult r1 = run_process(sft(dir() + "/s1"), 300);
  ASSERT_EQ(r1.exit_code, 0) << r1;
  const auto a = read_metrics(dir() + "/s1");
  ASSERT_EQ(a.size(), 3u);
  for (int np : {2, 4}) {
    auto argv = sft(dir() + "/s" + std::to_string(np));
    if (np == 4) argv.insert(argv.end(), {"--set", "dist.ep=2"});
    const ProcessResult r = mpirun(np, argv, 300);
    ASSERT_EQ(r.exit_code, 0) << r;
    const auto b = read_metrics(dir() + "/s" + std::to_string(np));
    ASSERT_EQ(b.size(), 3u) << r;
    for (size_t i = 0; i < a.size(); ++i) {
      const double la = a[i]["loss"].get<double>(), lb = b[i]["loss"].get<double>();
      EXPECT_LE(std::fabs(la - lb), 1e-5 * std::fabs(la)) << "np " << np << " step " << i + 1;
    }
  }
}

}  // namespace
}  // namespace mt::e2e
