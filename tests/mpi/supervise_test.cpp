// supervise_test.cpp — `moetrain supervise` on this machine (--local: the
// hosts are logical, every rank runs here): 20 SIGKILLs of random ranks end
// with the bits of an uninterrupted run and no step lost beyond the last
// commit; a hung rank is named and replaced; a lost rank with no spare
// continues on fewer ranks with the same global batch (losses within the
// distributed tolerance) and the host is used again when it comes back; a
// supervisor killed and started again finishes the same run.
#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>
#include <random>

#include "support/e2e.h"
#include "support/mpi.h"

namespace mt::e2e {
namespace {

using nlohmann::json;

const std::vector<std::string> kTrain = {"--preset", "tiny-test", "--set", "train.threads=1", "--set",
                                         "model.capacity_factor=1.0"};

std::vector<std::string> train_args(int64_t steps, int64_t every, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = kTrain;
  a.insert(a.end(), {"--set", "train.steps=" + std::to_string(steps), "--set",
                     "train.checkpoint_every=" + std::to_string(every)});
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

std::vector<std::string> supervise_argv(const std::string& hosts, const std::string& run, std::vector<std::string> opts,
                                        const std::vector<std::string>& train) {
  std::vector<std::string> a = {moetrain_binary(), "supervise", "--hosts", hosts, "--run-dir", run, "--local"};
  a.insert(a.end(), opts.begin(), opts.end());
  a.push_back("--");
  a.insert(a.end(), train.begin(), train.end());
  return a;
}

std::vector<json> events(const std::string& run) {
  std::vector<json> out;
  std::istringstream in(read_file(run + "/events.jsonl"));
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

// The state hash the last launch printed.
std::string final_hash(const std::string& run) {
  std::string last;
  for (const std::string& f : list_dir(run + "/supervisor"))
    if (f.starts_with("launch_")) last = f;
  return done_state_hash(read_file(run + "/supervisor/" + last));
}

std::string reference_hash(const TempDir& tmp, int np, const std::vector<std::string>& train) {
  std::vector<std::string> a = train;
  a.insert(a.end(), {"--run-dir", tmp / ("ref" + std::to_string(np))});
  const auto r = mpi_train(np, a, 300);
  EXPECT_EQ(r.exit_code, 0) << r;
  return done_state_hash(r.err);
}

TEST(Supervise, TwentyRandomKillsEndWithTheUninterruptedBits) {
  TempDir tmp;
  write_file(tmp / "hosts", "n0\nn1\nn2\nn3\n");
  const auto train = train_args(240, 4);
  const std::string run = tmp / "run";
  Background sup(supervise_argv(tmp / "hosts", run,
                                {"--spares", "2", "--recovery", "0", "--quarantine-window", "0", "--heartbeat-timeout",
                                 "30", "--max-restarts", "50"},
                                train),
                 tmp / "sup.out", tmp / "sup.err");
  std::mt19937 rng(7);
  int kills = 0;
  int64_t last_kill_step = 0;
  const double t0 = now_s();
  while (sup.running() && kills < 20 && now_s() - t0 < 400) {
    sleep_s(0.02);
    std::istringstream in(read_file(run + "/supervisor/heartbeat/rank_" + std::to_string(rng() % 2) + ".json"));
    const json h = json::parse(in, nullptr, false);
    if (!h.is_object() || h.value("phase", "") != "step") continue;
    const int64_t step = h["step"].get<int64_t>();
    if (step < last_kill_step + 6 || step > 230) continue;
    if (::kill(pid_t(h["pid"].get<int64_t>()), SIGKILL) == 0) {
      ++kills;
      last_kill_step = step;
    }
  }
  while (sup.running() && now_s() - t0 < 600) sleep_s(0.1);
  ASSERT_FALSE(sup.running());
  const std::string err = read_file(tmp / "sup.err");
  ASSERT_NE(err.find("finished at step 240"), std::string::npos) << err;
  EXPECT_GE(kills, 15) << "the run ended before enough kills";
  // No step lost beyond the last commit: every relaunch resumes from the
  // newest checkpoint committed before the failure (the trainer logs each
  // commit), or from a newer one committed in the instant before the kill
  // left no log line, never from an older one. How many steps that is
  // depends on how long the asynchronous write took, not on this test.
  const auto ev = events(run);
  int failures = 0;
  int64_t committed = 0;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev[i]["event"] == "checkpoint") committed = std::max(committed, ev[i]["step"].get<int64_t>());
    if (ev[i]["event"] != "failure") continue;
    ++failures;
    for (size_t j = i + 1; j < ev.size(); ++j)
      if (ev[j]["event"] == "launch") {
        const int64_t from = ev[j]["from_step"].get<int64_t>();
        EXPECT_GE(from, committed) << ev[i].dump();
        EXPECT_LE(from, ev[i]["step"].get<int64_t>()) << ev[i].dump();
        EXPECT_EQ(from % 4, 0) << ev[i].dump();
        break;
      }
  }
  EXPECT_GE(committed, 200) << "the trainer logged no checkpoint commits";
  EXPECT_EQ(failures, kills);
  EXPECT_EQ(final_hash(run), reference_hash(tmp, 2, train));
}

TEST(Supervise, AHungRankIsNamedAndReplaced) {
  TempDir tmp;
  write_file(tmp / "hosts", "n0\nn1\nn2\n");
  const auto train = train_args(40, 5, {"--inject-fault", "hang:1:15"});
  const auto r = run_process(
      supervise_argv(tmp / "hosts", tmp / "run", {"--spares", "1", "--heartbeat-timeout", "3"}, train), 300);
  ASSERT_EQ(r.exit_code, 0) << r;
  const auto ev = events(tmp / "run");
  bool named = false;
  for (const json& e : ev)
    if (e["event"] == "failure") {
      EXPECT_EQ(e["kind"], "hang");
      EXPECT_EQ(e["rank"], 1);
      EXPECT_EQ(e["host"], "n1");
      EXPECT_NE(e["detail"].get<std::string>().find("rank 1"), std::string::npos) << e.dump();
      named = true;
    }
  EXPECT_TRUE(named);
  EXPECT_EQ(final_hash(tmp / "run"), reference_hash(tmp, 2, train_args(40, 5)));
  // The run's report shows the timeline of what happened.
  const std::string report = read_file(tmp / "run/report.html");
  EXPECT_NE(report.find("<h2>Events</h2>"), std::string::npos);
}

// A slowed rank (0.5 s before each step) makes the others wait: named as a
// straggler, and with --stragglers replace its host is swapped for the spare.
TEST(Supervise, AStragglerIsNamedAndReplaced) {
  TempDir tmp;
  write_file(tmp / "hosts", "n0\nn1\nn2\n");
  const auto train = train_args(30, 5, {"--inject-fault", "slow:1:8"});
  const auto r = run_process(
      supervise_argv(tmp / "hosts", tmp / "run", {"--spares", "1", "--stragglers", "replace"}, train), 300);
  ASSERT_EQ(r.exit_code, 0) << r;
  bool named = false;
  for (const json& e : events(tmp / "run"))
    if (e["event"] == "straggler") {
      EXPECT_EQ(e["rank"], 1);
      EXPECT_EQ(e["host"], "n1");
      named = true;
    }
  EXPECT_TRUE(named);
  EXPECT_NE(r.err.find("spare host n2 joins"), std::string::npos) << r;
  EXPECT_EQ(final_hash(tmp / "run"), reference_hash(tmp, 2, train_args(30, 5)));
}

// Silent wrong math (a GEMM off by 1e-3 on rank 1 from step 5): the periodic
// health check names rank 1, the supervisor marks its host and relaunches
// from the last checkpoint on the spare: replace and roll back.
TEST(Supervise, AWrongMathRankIsReplacedAndRolledBack) {
  TempDir tmp;
  write_file(tmp / "hosts", "n0\nn1\nn2\n");
  const auto train = train_args(30, 4, {"--set", "health.every=2", "--inject-fault", "wronggemm:1:5"});
  const auto r = run_process(supervise_argv(tmp / "hosts", tmp / "run", {"--spares", "1"}, train), 300);
  ASSERT_EQ(r.exit_code, 0) << r;
  bool named = false;
  for (const json& e : events(tmp / "run"))
    if (e["event"] == "failure") {
      EXPECT_EQ(e["rank"], 1) << e.dump();
      EXPECT_EQ(e["host"], "n1") << e.dump();
      named = true;
    }
  EXPECT_TRUE(named);
  EXPECT_NE(r.err.find("spare host n2 joins"), std::string::npos) << r;
  EXPECT_EQ(final_hash(tmp / "run"), reference_hash(tmp, 2, train_args(30, 4, {"--set", "health.every=2"})));
}

TEST(Supervise, ElasticShrinksThenGrowsBackWhenTheHostReturns) {
  TempDir tmp;
  write_file(tmp / "hosts", "n0\nn1\nn2\nn3\n");
  // tiny-test's batch of 4: 3 ranks do not divide it, so losing one of 4 leaves 2.
  // The host is back 0.5 s after its failure is seen: after the relaunch on 2
  // ranks (decided as the failure is recorded) and well before 2 ranks finish
  // the run's 600 steps, even on a CPU much faster than this test's first
  // (300 steps and 1.5 s stopped being enough once tiny products got cheaper).
  constexpr int64_t kSteps = 600;
  const auto train = train_args(kSteps, 5, {"--inject-fault", "kill:3:10"});
  const auto r =
      run_process(supervise_argv(tmp / "hosts", tmp / "run",
                                 {"--min-ranks", "2", "--recovery", "0.5", "--heartbeat-timeout", "30"}, train),
                  400);
  ASSERT_EQ(r.exit_code, 0) << r;
  std::vector<int64_t> ranks;
  bool grew = false;
  for (const json& e : events(tmp / "run")) {
    if (e["event"] == "launch") ranks.push_back(e["ranks"].get<int64_t>());
    if (e["event"] == "scale up") grew = true;
  }
  ASSERT_GE(ranks.size(), 2u);
  EXPECT_EQ(ranks[0], 4);
  EXPECT_EQ(ranks[1], 2);  // shrunk, same global batch
  EXPECT_TRUE(grew) << "the host that came back was not used again";
  EXPECT_EQ(ranks.back(), 4);
  // It is named as what it is, not as a spare (issue 44, item 9).
  EXPECT_NE(r.err.find("host n3, back after a failure, rejoins"), std::string::npos) << r;
  EXPECT_EQ(r.err.find("spare host n3"), std::string::npos) << r;
  // Losses match the uninterrupted 4-rank run within the distributed tolerance.
  std::vector<std::string> ref = train_args(kSteps, 5);
  ref.insert(ref.end(), {"--run-dir", tmp / "ref"});
  ASSERT_EQ(mpi_train(4, ref, 300).exit_code, 0);
  const auto a = losses(read_metrics(tmp / "run")), b = losses(read_metrics(tmp / "ref"));
  ASSERT_EQ(a.size(), b.size());
  // Rounding differs between 2 and 4 ranks (reduction order); over the first
  // 40 steps (35 of them on 2 ranks) within the distributed tolerance of
  // tests/mpi/distributed_training_test.cpp, and bounded up to step 300 (past
  // about 340 the two trajectories part further, as any two orders of
  // summation do over enough steps).
  for (size_t i = 0; i < a.size() && i < 300; ++i)
    EXPECT_NEAR(a[i], b[i], (i < 40 ? 1e-5 : 2e-3) * std::abs(b[i])) << "step " << i + 1;
}

TEST(Supervise, ASupervisorKilledAndStartedAgainFinishesTheRun) {
  TempDir tmp;
  write_file(tmp / "hosts", "n0\nn1\n");
  const auto train = train_args(200, 5);
  const auto argv = supervise_argv(tmp / "hosts", tmp / "run", {"--heartbeat-timeout", "30"}, train);
  {
    Background sup(argv, tmp / "a.out", tmp / "a.err");
    const double t0 = now_s();
    while (sup.running() && now_s() - t0 < 120) {
      std::istringstream in(read_file(tmp / "run/supervisor/heartbeat/rank_0.json"));
      const json h = json::parse(in, nullptr, false);
      if (h.is_object() && h.value("step", int64_t(0)) >= 30) break;
      sleep_s(0.02);
    }
    if (!sup.kill9()) GTEST_SKIP() << "finished before the kill";
  }
  sleep_s(1.0);  // the ranks die with their launcher (PR_SET_PDEATHSIG)
  const auto again = run_process(argv, 300);
  ASSERT_EQ(again.exit_code, 0) << again;
  EXPECT_NE(again.err.find("continuing to supervise"), std::string::npos) << again;
  EXPECT_EQ(final_hash(tmp / "run"), reference_hash(tmp, 2, train));
}

}  // namespace
}  // namespace mt::e2e
