// run_dir_test.cpp — a run directory belongs to one run (docs/training.md
// "Run directories"): --resume without --config continues the saved run; a
// second run into a used directory is refused and changes nothing;
// --move-aside keeps the old run; an extended run follows the documented
// warmup-stable-decay schedule (it ends exactly where a run planned that long
// from the start ends) and an extension that would rewrite applied learning
// rates is refused.
#include <gtest/gtest.h>

#include <map>

#include "optim/lr_schedule.h"
#include "support/e2e.h"

namespace mt::e2e {
namespace {

std::vector<std::string> tiny(const std::string& run_dir, std::vector<std::string> sets) {
  std::vector<std::string> a = {"--preset", "tiny-test", "--run-dir", run_dir};
  for (const std::string& s : sets) a.insert(a.end(), {"--set", s});
  return a;
}

// Every file under DIR with its bytes: "nothing in it changes" made checkable.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files[e.path().string()] = read_file(e.path().string());
  return files;
}

TEST(RunDir, ResumeWithoutConfigContinuesTheSavedRun) {
  TempDir tmp;
  const std::string run = tmp / "r";
  // A 12-step run (the preset says 20) with a checkpoint at 6, then a crash after it.
  const auto full = train(tiny(tmp / "full", {"train.steps=12", "train.threads=1"}));
  ASSERT_EQ(full.exit_code, 0) << full;
  const auto a = train(tiny(run, {"train.steps=12", "train.checkpoint_every=6", "train.threads=1"}));
  ASSERT_EQ(a.exit_code, 0) << a;
  fs::remove_all(run + "/checkpoints/step_00000012");
  ASSERT_TRUE(fs::exists(run + "/config.toml"));
  // No --config, no --preset: the saved config (12 steps), not the quickstart default.
  const auto b = train({"--run-dir", run, "--resume"});
  ASSERT_EQ(b.exit_code, 0) << b;
  EXPECT_NE(b.err.find("resumed from"), std::string::npos) << b;
  EXPECT_NE(b.err.find("# done: step 12,"), std::string::npos) << b;
  EXPECT_EQ(done_state_hash(b.err), done_state_hash(full.err));
  // Nothing to resume from and nothing saved: a clear refusal, exit 2.
  const auto c = train({"--run-dir", tmp / "empty", "--resume"});
  EXPECT_EQ(c.exit_code, 2) << c;
  EXPECT_NE(c.err.find("no saved config.toml"), std::string::npos) << c;
}

TEST(RunDir, SecondRunIntoAUsedDirectoryIsRefusedAndChangesNothing) {
  TempDir tmp;
  const std::string run = tmp / "r";
  const auto a = train(tiny(run, {"train.steps=4", "train.threads=1"}));
  ASSERT_EQ(a.exit_code, 0) << a;
  const auto before = snapshot(run);
  const auto b = train(tiny(run, {"train.steps=2", "train.threads=1"}));
  EXPECT_EQ(b.exit_code, 2) << b;
  EXPECT_NE(b.err.find("already holds a run"), std::string::npos) << b;
  EXPECT_NE(b.err.find("--resume"), std::string::npos) << b;
  EXPECT_TRUE(snapshot(run) == before) << "the refused run touched " << run;
  // --move-aside starts over and keeps the old run, renamed, byte for byte.
  const auto d = train([&] {
    auto args = tiny(run, {"train.steps=2", "train.threads=1"});
    args.push_back("--move-aside");
    return args;
  }());
  ASSERT_EQ(d.exit_code, 0) << d;
  ASSERT_TRUE(fs::exists(run + ".prev-1"));
  std::map<std::string, std::string> moved;
  for (const auto& [path, bytes] : snapshot(run + ".prev-1")) moved[run + path.substr(run.size() + 7)] = bytes;
  EXPECT_TRUE(moved == before);
  EXPECT_NE(d.err.find("# done: step 2,"), std::string::npos) << d;
}

TEST(RunDir, ExtendedRunFollowsTheWsdSchedule) {
  TempDir tmp;
  // Planned as 30 steps from the start.
  const auto planned = train(tiny(tmp / "p", {"train.steps=30", "train.threads=1"}));
  ASSERT_EQ(planned.exit_code, 0) << planned;
  // Planned as 20 (warmup 10, decay from step 17), stopped at 12, extended to 30:
  // the 12 applied rates are the same for 20 and 30 steps, so the extended run
  // must end exactly where the 30-step run ends.
  const std::string run = tmp / "e";
  const auto first = train(tiny(run, {"train.steps=20", "train.checkpoint_every=12", "train.threads=1"}));
  ASSERT_EQ(first.exit_code, 0) << first;
  fs::remove_all(run + "/checkpoints/step_00000020");
  const auto ext = train({"--run-dir", run, "--resume", "--set", "train.steps=30"});
  ASSERT_EQ(ext.exit_code, 0) << ext;
  EXPECT_NE(ext.err.find("train.steps 20 -> 30"), std::string::npos) << ext;
  EXPECT_EQ(done_state_hash(ext.err), done_state_hash(planned.err));
  // The metrics carry the rates of the 30-step schedule from step 13 on.
  ScheduleParams sp;  // tiny-test's schedule: the defaults with warmup 10
  sp.lr = 3e-3;
  const auto m = read_metrics(run);
  ASSERT_EQ(m.size(), 30u);
  for (const auto& j : m) {
    const int64_t s = j["step"].get<int64_t>();
    EXPECT_DOUBLE_EQ(j["lr"].get<double>(), learning_rate(sp, s - 1, s <= 12 ? 20 : 30)) << "step " << s;
  }
  // After the decay began, extending would rewrite applied rates: refused.
  const std::string late = tmp / "late";
  const auto l1 = train(tiny(late, {"train.steps=20", "train.threads=1"}));
  ASSERT_EQ(l1.exit_code, 0) << l1;
  const auto l2 = train({"--run-dir", late, "--resume", "--set", "train.steps=30"});
  EXPECT_NE(l2.exit_code, 0) << l2;
  EXPECT_NE(l2.err.find("would change the learning rate already applied at step"), std::string::npos) << l2;
}

// Issue 44, item 10: a run config's relative paths resolve against the
// working directory, and the run saves them absolute, so `train --resume`
// (and generate, eval, export) work from any other directory.
TEST(RunDir, RelativePathsAreSavedAbsoluteSoTheRunResumesFromAnywhere) {
  TempDir tmp;
  std::string text;
  for (int i = 0; i < 300; ++i) text += "the quick brown fox jumps over the lazy dog\n";
  fs::create_directories(tmp / "work/corpus");
  write_file(tmp / "work/corpus/a.txt", text);
  auto in = [&](const std::string& dir, const std::string& args) {
    return run_process({"/bin/sh", "-c", "cd '" + dir + "' && exec '" + moetrain_binary() + "' " + args}, 120);
  };
  const auto first = in(tmp / "work",
                        "train --preset tiny-test --run-dir run --no-progress --set train.steps=4 "
                        "--set 'data.path=\"corpus/a.txt\"'");
  ASSERT_EQ(first.exit_code, 0) << first;
  EXPECT_NE(read_file(tmp / "work/run/config.toml").find("path = \"" + (tmp / "work/corpus/a.txt") + "\""),
            std::string::npos);
  const auto resumed = in(tmp.path(), "train --run-dir work/run --resume --no-progress --set train.steps=6");
  ASSERT_EQ(resumed.exit_code, 0) << resumed;
  EXPECT_NE(resumed.err.find("resumed from"), std::string::npos) << resumed;
  const auto gen =
      in("/", "generate --ckpt '" + (tmp / "work/run") + "' --prompt the --max-new-tokens 4 --no-progress");
  EXPECT_EQ(gen.exit_code, 0) << gen;
}

}  // namespace
}  // namespace mt::e2e
