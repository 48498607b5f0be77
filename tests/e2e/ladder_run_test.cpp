// ladder_run_test.cpp — `moetrain ladder run`: three rungs of the tiny-test
// family (width/depth rule, tokens-per-parameter budget) write a results
// file that `ladder fit` reads; a ladder SIGKILLed in the middle of a rung
// and started again ends with the same results file, byte for byte; a
// cooldown branch is bitwise the run trained for its budget from scratch,
// and running rungs in parallel changes nothing; with [eval] tasks, every
// run records the accuracy `moetrain eval` gives its final checkpoint, which
// `ladder fit` reads.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "ladder/results.h"
#include "support/e2e.h"

namespace mt::e2e {
namespace {

std::string ladder_file(const std::string& dir, const std::string& extra = "") {
  const std::string path = dir + "/ladder.toml";
  write_file(path, std::string("[ladder]\nbase = \"") + MT_SOURCE_DIR +
                       "/configs/tiny-test.toml\"\n"
                       "set = [\"data.eval_frac=0.1\", \"train.threads=1\"]\n"
                       "tokens_per_param = 0.5\nhead_dim = 16\nexpert_ratio = 1.0\n" + extra +
                       "[[rung]]\nname = \"r1\"\nd_model = 32\nn_layers = 1\n"
                       "[[rung]]\nname = \"r2\"\nd_model = 64\nn_layers = 2\n"
                       "[[rung]]\nname = \"r3\"\nd_model = 96\nn_layers = 2\n");
  return path;
}

TEST(LadderRun, RungsGrowAndTheResultsFeedTheFit) {
  TempDir tmp;
  const auto r = run_process({moetrain_binary(), "ladder", "run", ladder_file(tmp.path()), "--out", tmp / "out",
                              "--no-progress"},
                             300);
  ASSERT_EQ(r.exit_code, 0) << r;
  const std::string results = read_file(tmp / "out/results.jsonl");
  std::vector<nlohmann::json> rows;
  std::istringstream in(results);
  for (std::string line; std::getline(in, line);) rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), 3u);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i]["name"], "r" + std::to_string(i + 1));
    // The budget is tokens_per_param x active parameters, rounded to whole steps of 256 tokens.
    const double want = 0.5 * rows[i]["active_params"].get<double>();
    EXPECT_NEAR(rows[i]["tokens"].get<double>(), want, 128.0 + 1e-9);
    EXPECT_GT(rows[i]["loss"].get<double>(), 0.0);
    if (i > 0) {
      EXPECT_GT(rows[i]["active_params"].get<double>(), rows[i - 1]["active_params"].get<double>());
      EXPECT_LT(rows[i]["loss"].get<double>(), rows[i - 1]["loss"].get<double>());  // bigger and longer: lower loss
    }
  }
  // ladder fit reads the file (three runs cannot pin five parameters: a clean refusal or a fit, never a crash).
  const auto fit = run_process({moetrain_binary(), "ladder", "fit", tmp / "out/results.jsonl", "--bootstrap", "0"});
  EXPECT_TRUE(fit.exit_code == 0 || fit.exit_code == 2) << fit;
  // Everything already done: a second invocation trains nothing and changes nothing.
  const auto again = run_process({moetrain_binary(), "ladder", "run", ladder_file(tmp.path()), "--out", tmp / "out",
                                  "--no-progress"});
  ASSERT_EQ(again.exit_code, 0) << again;
  EXPECT_EQ(read_file(tmp / "out/results.jsonl"), results);
  EXPECT_NE(again.err.find("already in"), std::string::npos) << again;
}

TEST(LadderRun, KilledLadderResumesToTheSameResults) {
  TempDir tmp;
  const std::string ladder = ladder_file(tmp.path(), "cooldowns = [0.5]\n");
  const auto clean = run_process({moetrain_binary(), "ladder", "run", ladder, "--out", tmp / "a", "--no-progress"}, 300);
  ASSERT_EQ(clean.exit_code, 0) << clean;
  // Kill the second ladder once rung r3 has committed a checkpoint (mid-rung).
  Background bg({moetrain_binary(), "ladder", "run", ladder, "--out", tmp / "b", "--no-progress"}, tmp / "b.out",
                tmp / "b.err");
  const double t0 = now_s();
  while (bg.running() && !fs::exists(tmp / "b/r3/checkpoints") && now_s() - t0 < 120) sleep_s(0.005);
  const bool killed = bg.kill9();
  if (!killed) GTEST_SKIP() << "the ladder finished before it could be killed mid-rung";
  const auto resumed = run_process({moetrain_binary(), "ladder", "run", ladder, "--out", tmp / "b", "--no-progress"}, 300);
  ASSERT_EQ(resumed.exit_code, 0) << resumed;
  EXPECT_EQ(read_file(tmp / "b/results.jsonl"), read_file(tmp / "a/results.jsonl"));
}

std::vector<nlohmann::json> rows_of(const std::string& text) {
  std::vector<nlohmann::json> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

TEST(LadderRun, CooldownBranchIsTheRunOfItsBudgetAndJobsChangeNothing) {
  TempDir tmp;
  const std::string ladder = ladder_file(tmp.path(), "cooldowns = [0.5]\n");
  const auto two = run_process({moetrain_binary(), "ladder", "run", ladder, "--out", tmp / "two", "--jobs", "2",
                                "--no-progress"},
                               300);
  ASSERT_EQ(two.exit_code, 0) << two;
  const std::string results = read_file(tmp / "two/results.jsonl");
  const auto rows = rows_of(results);
  ASSERT_EQ(rows.size(), 6u);  // per rung: the half-budget branch, then the full run
  const std::vector<std::string> names = {"r1@0.5", "r1", "r2@0.5", "r2", "r3@0.5", "r3"};
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i]["name"], names[i]);
  for (size_t i = 0; i < rows.size(); i += 2) {
    EXPECT_EQ(rows[i]["meta"]["steps"].get<int64_t>() * 2 - rows[i + 1]["meta"]["steps"].get<int64_t>(),
              rows[i + 1]["meta"]["steps"].get<int64_t>() % 2 ? 1 : 0);
    EXPECT_GT(rows[i]["loss"].get<double>(), rows[i + 1]["loss"].get<double>());  // half the tokens: higher loss
    EXPECT_EQ(rows[i]["active_params"], rows[i + 1]["active_params"]);
  }
  // The branch of r2 is bitwise the r2 shape trained for the branch's steps from scratch.
  const int64_t steps = rows[2]["meta"]["steps"].get<int64_t>();
  const auto fresh = run_process({moetrain_binary(), "train", "--config", std::string(MT_SOURCE_DIR) + "/configs/tiny-test.toml",
                                  "--set", "data.eval_frac=0.1", "--set", "train.threads=1", "--set", "model.d_model=64",
                                  "--set", "model.n_layers=2", "--set", "model.n_heads=4", "--set", "model.d_expert=64",
                                  "--set", "train.steps=" + std::to_string(steps), "--set",
                                  "train.eval_every=" + std::to_string(steps), "--run-dir", tmp / "fresh", "--no-progress"},
                                 300);
  ASSERT_EQ(fresh.exit_code, 0) << fresh;
  EXPECT_NE(fresh.err.find("state hash " + rows[2]["meta"]["state_hash"].get<std::string>()), std::string::npos)
      << fresh.err << "\nbranch: " << rows[2].dump();
  // One run at a time: the same file, byte for byte.
  const auto one = run_process({moetrain_binary(), "ladder", "run", ladder, "--out", tmp / "one", "--no-progress"}, 300);
  ASSERT_EQ(one.exit_code, 0) << one;
  EXPECT_EQ(read_file(tmp / "one/results.jsonl"), results);
}

// Byte-level multiple choice (tiny-test trains on text with the byte tokenizer).
std::string toy_task() {
  std::string t;
  const char* words[] = {"the", "of", "and", "to", "in", "is", "that", "it"};
  for (int i = 0; i < 12; ++i)
    t += fmt::format("{{\"context\": \"{} {}\", \"choices\": [\" {}\", \" {} {}\", \" {}\"], \"answer\": {}}}\n",
                     words[i % 8], words[(i + 3) % 8], words[(i + 1) % 8], words[(i + 5) % 8], words[(i + 2) % 8],
                     words[(i + 7) % 8], i % 3);
  return t;
}

TEST(LadderRun, EvalTasksAreRecordedAndFeedTheDownstreamFit) {
  TempDir tmp;
  write_file(tmp / "toy.jsonl", toy_task());
  std::string held;  // a text set: scored, recorded, not fitted
  for (int i = 0; i < 200; ++i) held += fmt::format("held out sentence number {} of the text set.\n", i);
  write_file(tmp / "held.txt", held);
  // A ladder without tasks, then the same ladder asking for one: the recorded
  // runs are scored without being trained again (same losses, same state).
  // Cooldown branches make 6 results: enough for `ladder fit`'s law, and so its sigmoid.
  const auto plain = run_process({moetrain_binary(), "ladder", "run", ladder_file(tmp.path(), "cooldowns = [0.5]\n"),
                                  "--out", tmp / "out", "--no-progress"},
                                 300);
  ASSERT_EQ(plain.exit_code, 0) << plain;
  const auto before = rows_of(read_file(tmp / "out/results.jsonl"));
  const std::string ladder = ladder_file(
      tmp.path(),
      "cooldowns = [0.5]\n[eval]\ntasks = [\"toy.jsonl\"]\ntext_sets = [\"held.txt\"]\nmetric = \"acc_norm\"\n");
  const auto r = run_process({moetrain_binary(), "ladder", "run", ladder, "--out", tmp / "out", "--jobs", "2",
                              "--no-progress"},
                             300);
  ASSERT_EQ(r.exit_code, 0) << r;
  const std::string results = read_file(tmp / "out/results.jsonl");
  const auto rows = rows_of(results);
  ASSERT_EQ(rows.size(), 6u);
  ASSERT_EQ(before.size(), 6u);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i]["name"], before[i]["name"]);
    EXPECT_EQ(rows[i]["loss"], before[i]["loss"]);
    EXPECT_EQ(rows[i]["meta"]["state_hash"], before[i]["meta"]["state_hash"]);
    const nlohmann::json& t = rows[i]["meta"]["eval"]["tasks"]["toy"];
    EXPECT_EQ(rows[i]["meta"]["eval"]["metric"], "acc_norm");
    EXPECT_EQ(t["docs"], 12);
    EXPECT_EQ(rows[i]["accuracy"]["toy"], t["acc_norm"]);  // eval.metric
    EXPECT_GT(rows[i]["meta"]["eval"]["text_set_bits_per_byte"]["held"].get<double>(), 0.0) << rows[i].dump();
    // What `moetrain eval` prints for the same checkpoint.
    const auto ev = run_process({moetrain_binary(), "eval", "--ckpt", tmp / ("out/" + rows[i]["name"].get<std::string>()),
                                 "--tasks", tmp / "toy.jsonl", "--threads", "1"});
    ASSERT_EQ(ev.exit_code, 0) << ev;
    EXPECT_NE(ev.out.find(fmt::format("acc {:.4f} ± {:.4f}  acc_norm {:.4f}", t["acc"].get<double>(),
                                      t["acc_stderr"].get<double>(), t["acc_norm"].get<double>())),
              std::string::npos)
        << ev.out << "\nrecorded: " << t.dump();
  }
  // The reader of `ladder fit` sees them as the runs' accuracies.
  auto runs = ladder::load_results(tmp / "out/results.jsonl");
  ASSERT_TRUE(runs) << runs.status().message();
  for (size_t i = 0; i < rows.size(); ++i)
    EXPECT_EQ((*runs)[i].accuracy.at("toy"), rows[i]["accuracy"]["toy"].get<double>());
  const auto fit = run_process({moetrain_binary(), "ladder", "fit", tmp / "out/results.jsonl", "--bootstrap", "0",
                                "--chance", "toy=0.33"});
  ASSERT_EQ(fit.exit_code, 0) << fit;
  EXPECT_NE(fit.out.find("accuracy toy: 0.33 + (1 - 0.33) / (1 + exp("), std::string::npos) << fit;
  EXPECT_NE(fit.out.find("6 runs, rmse"), std::string::npos) << fit;
  // Everything recorded: nothing runs again, the file is unchanged.
  const auto again = run_process({moetrain_binary(), "ladder", "run", ladder, "--out", tmp / "out", "--no-progress"});
  ASSERT_EQ(again.exit_code, 0) << again;
  EXPECT_EQ(read_file(tmp / "out/results.jsonl"), results);
  EXPECT_NE(again.err.find("already in"), std::string::npos) << again;
}

TEST(LadderRun, CooldownsNeedRoomBeforeTheirDecay) {
  TempDir tmp;
  const auto r = run_process({moetrain_binary(), "ladder", "run", ladder_file(tmp.path(), "cooldowns = [0.01]\n"),
                              "--out", tmp / "out", "--no-progress"});
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_NE(r.err.find("cooldown 0.01"), std::string::npos) << r;
  EXPECT_FALSE(fs::exists(tmp / "out")) << "a refused ladder leaves nothing";
}

// Issue 44, item 2: a ladder re-run into its output directory after the
// ladder changed (here tokens_per_param 0.5 -> 0.25) reused the old results
// and exited 0. It is refused naming what differs, and --move-aside starts
// over; adding a rung to an unchanged ladder continues it.
TEST(LadderRun, AChangedLadderIsRefusedUntilMovedAside) {
  TempDir tmp;
  auto one_rung = [&](const std::string& name, const std::string& ratio, const std::string& more = "") {
    const std::string path = tmp / name;
    write_file(path, std::string("[ladder]\nbase = \"") + MT_SOURCE_DIR +
                         "/configs/tiny-test.toml\"\nset = [\"data.eval_frac=0.1\", \"train.threads=1\"]\n"
                         "tokens_per_param = " +
                         ratio +
                         "\nhead_dim = 16\n"
                         "[[rung]]\nname = \"r1\"\nd_model = 32\nn_layers = 1\n" +
                         more);
    return path;
  };
  auto ladder = [&](const std::string& file, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {moetrain_binary(), "ladder", "run", file, "--out", tmp / "out", "--no-progress"};
    a.insert(a.end(), extra.begin(), extra.end());
    return run_process(a, 300);
  };
  const auto first = ladder(one_rung("a.toml", "0.5"));
  ASSERT_EQ(first.exit_code, 0) << first;
  const std::string results = read_file(tmp / "out/results.jsonl");

  const auto changed = ladder(one_rung("b.toml", "0.25"));
  EXPECT_EQ(changed.exit_code, 2) << changed;
  EXPECT_NE(changed.err.find("different configuration"), std::string::npos) << changed;
  EXPECT_NE(changed.err.find("r1: train.steps = "), std::string::npos) << changed;
  EXPECT_NE(changed.err.find("--move-aside"), std::string::npos) << changed;
  EXPECT_EQ(read_file(tmp / "out/results.jsonl"), results) << "a refused ladder changed the results";

  const auto more = ladder(one_rung("c.toml", "0.5", "[[rung]]\nname = \"r0\"\nd_model = 64\nn_layers = 1\n"));
  ASSERT_EQ(more.exit_code, 0) << more;
  EXPECT_NE(more.err.find("already in"), std::string::npos) << more;  // r1 reused, r0 trained

  const auto over = ladder(one_rung("b.toml", "0.25"), {"--move-aside"});
  ASSERT_EQ(over.exit_code, 0) << over;
  EXPECT_TRUE(fs::exists(tmp / "out.prev-1/results.jsonl"));
  EXPECT_NE(read_file(tmp / "out/results.jsonl"), results);

  // A run directory is not a ladder's: refused, untouched.
  const auto train_run = train({"--preset", "tiny-test", "--run-dir", tmp / "run", "--set", "train.steps=2"});
  ASSERT_EQ(train_run.exit_code, 0) << train_run;
  const auto into_run = run_process({moetrain_binary(), "ladder", "run", tmp / "a.toml", "--out", tmp / "run"});
  EXPECT_EQ(into_run.exit_code, 2) << into_run;
  EXPECT_NE(into_run.err.find("did not write"), std::string::npos) << into_run;
  EXPECT_FALSE(fs::exists(tmp / "run/results.jsonl"));
}

}  // namespace
}  // namespace mt::e2e
