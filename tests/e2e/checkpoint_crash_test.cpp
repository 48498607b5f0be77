// checkpoint_crash_test.cpp — `moetrain train --resume` after damage: a
// flipped byte in the newest checkpoint's tensor file or a truncated manifest
// makes it resume from the previous checkpoint (and still end bit for bit
// where the undamaged run ended); leftover .tmp-step_* staging directories are
// never read; SIGKILL at random moments of a run that checkpoints every step
// (aimed at the checkpoint write) never leaves a step_* directory that fails
// `moetrain ckpt inspect`, and the run still resumes to the same final state.
#include <gtest/gtest.h>

#include <random>

#include "support/e2e.h"

namespace mt::e2e {
namespace {

std::vector<std::string> tiny(const std::string& run_dir, const std::vector<std::string>& sets,
                              bool resume = false) {
  std::vector<std::string> a = {"--preset", "tiny-test", "--run-dir", run_dir};
  for (const std::string& s : sets) {
    a.push_back("--set");
    a.push_back(s);
  }
  if (resume) a.push_back("--resume");
  return a;
}

std::string fmt_step(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08lld", static_cast<long long>(step));
  return buf;
}

const std::vector<std::string> kTwenty = {"train.threads=1", "train.steps=20", "train.checkpoint_every=10"};

struct Reference {
  std::string hash;            // tensor_hash of step_00000020
  std::vector<double> losses;  // per step
};

// Trains 20 steps with checkpoints at 10 and 20; returns the final state.
Reference train_twenty(const std::string& run_dir) {
  Reference ref;
  const auto r = train(tiny(run_dir, kTwenty));
  EXPECT_EQ(r.exit_code, 0) << r;
  const Inspect i = inspect(ckpt_dir(run_dir, 20));
  EXPECT_TRUE(i.ok()) << i.proc;
  EXPECT_TRUE(inspect(ckpt_dir(run_dir, 10)).ok());
  ref.hash = i.tensor_hash();
  ref.losses = losses(read_metrics(run_dir));
  EXPECT_EQ(ref.losses.size(), 20u);
  return ref;
}

// Resumes a damaged run: it must skip step 20 with a warning naming it,
// resume from step 10, and end where the undamaged run ended.
void resume_expect_from_ten(const std::string& run_dir, const Reference& ref, bool expect_warning) {
  const auto r = train(tiny(run_dir, kTwenty, /*resume=*/true));
  ASSERT_EQ(r.exit_code, 0) << r;
  const auto [dir, step] = resumed_from(r.err);
  EXPECT_EQ(step, 10) << r;
  EXPECT_EQ(dir, ckpt_dir(run_dir, 10)) << r;
  if (expect_warning) {
    EXPECT_NE(r.err.find("skipping checkpoint " + ckpt_dir(run_dir, 20)), std::string::npos) << r;
  }
  const Inspect i = inspect(ckpt_dir(run_dir, 20));
  ASSERT_TRUE(i.ok()) << i.proc;
  EXPECT_EQ(i.tensor_hash(), ref.hash) << "resumed run does not end in the undamaged run's state";
  const auto m = read_metrics(run_dir);
  ASSERT_TRUE(has_steps_1_to_n(m, 20));
  EXPECT_EQ(losses(m), ref.losses);
}

TEST(CheckpointCrash, FlippedByteInNewestTensorFileResumesFromPrevious) {
  TempDir tmp;
  const std::string run = tmp / "run";
  const Reference ref = train_twenty(run);
  ASSERT_FALSE(HasFailure());

  const std::string file = ckpt_dir(run, 20) + "/rank_00000.safetensors";
  std::string bytes = read_file(file);
  ASSERT_GT(bytes.size(), 1000u);
  bytes[bytes.size() / 2] ^= 0x10;  // inside the data section: one float changes
  write_file(file, bytes);
  const Inspect bad = inspect(ckpt_dir(run, 20));
  EXPECT_NE(bad.proc.exit_code, 0) << "ckpt inspect accepted a flipped byte\n" << bad.proc;

  resume_expect_from_ten(run, ref, /*expect_warning=*/true);
}

TEST(CheckpointCrash, TruncatedManifestResumesFromPrevious) {
  TempDir tmp;
  const std::string run = tmp / "run";
  const Reference ref = train_twenty(run);
  ASSERT_FALSE(HasFailure());

  const std::string manifest = ckpt_dir(run, 20) + "/manifest.json";
  const std::string text = read_file(manifest);
  ASSERT_GT(text.size(), 100u);
  write_file(manifest, text.substr(0, text.size() / 2));
  const Inspect bad = inspect(ckpt_dir(run, 20));
  EXPECT_NE(bad.proc.exit_code, 0) << "ckpt inspect accepted a truncated manifest\n" << bad.proc;

  resume_expect_from_ten(run, ref, /*expect_warning=*/true);
}

// What a crash before the commit rename leaves: a complete staging directory
// under a .tmp- name (here the real step-20 checkpoint, moved), plus junk.
// Readers must not use it; the next writer removes it.
TEST(CheckpointCrash, LeftoverStagingDirectoriesAreIgnored) {
  TempDir tmp;
  const std::string run = tmp / "run";
  const Reference ref = train_twenty(run);
  ASSERT_FALSE(HasFailure());

  const std::string root = run + "/checkpoints";
  fs::rename(ckpt_dir(run, 20), root + "/.tmp-step_00000020-424242");
  fs::create_directories(root + "/.tmp-step_00000030-1");
  write_file(root + "/.tmp-step_00000030-1/manifest.json", "{\"format\": \"moetrain-checkpoint\", \"step\": 30");
  write_file(root + "/.tmp-step_00000030-1/rank_00000.safetensors", "garbage");
  // A staging directory alone is not a checkpoint.
  EXPECT_NE(inspect(root + "/.tmp-step_00000030-1").proc.exit_code, 0);

  resume_expect_from_ten(run, ref, /*expect_warning=*/false);
  for (const std::string& name : list_dir(root))
    EXPECT_NE(name.rfind(".tmp-", 0), 0u) << "stale staging entry left behind: " << name;
}

// SIGKILL at random moments of a run that writes a checkpoint after every
// step. Every other kill waits for a staging directory (.tmp-step_*) to
// appear, i.e. lands during a checkpoint write. After each kill every
// committed step_* directory must pass `ckpt inspect`; resuming after the last
// kill must end in the uninterrupted run's state with one metrics line per step.
TEST(CheckpointCrash, KillDuringCheckpointWritesLeavesOnlyValidCheckpoints) {
  TempDir tmp;
  constexpr int64_t kSteps = 80;
  const std::vector<std::string> sets = {"train.threads=1", "train.steps=" + std::to_string(kSteps),
                                         "train.checkpoint_every=1"};
  const std::string ref_run = tmp / "ref", run = tmp / "killed", root = run + "/checkpoints";
  const auto ref = train(tiny(ref_run, sets));
  ASSERT_EQ(ref.exit_code, 0) << ref;
  const Inspect ref_final = inspect(ckpt_dir(ref_run, kSteps));
  ASSERT_TRUE(ref_final.ok()) << ref_final.proc;

  // Random kills land 10-25% of an uninterrupted run's time after the start,
  // so three of them cannot finish the run: all six attempts kill.
  std::mt19937 rng(20240601);  // fixed: the kill schedule is reproducible (timing still varies)
  std::uniform_real_distribution<double> delay(0.10 * ref.seconds, 0.25 * ref.seconds);
  int kills = 0, kills_during_write = 0;
  for (int attempt = 0; attempt < 6; ++attempt) {
    Background bg(train_argv(tiny(run, sets, /*resume=*/true)), tmp / "out.txt", tmp / "err.txt");
    const double t0 = now_s();
    if (attempt % 2 == 1) {
      // Aim at a write: kill as soon as a staging directory shows up.
      auto staging = [&] {
        for (const std::string& n : list_dir(root))
          if (n.rfind(".tmp-step_", 0) == 0) return true;
        return false;
      };
      while (bg.running() && !staging() && now_s() - t0 < 30) sleep_s(0.0002);
    } else {
      const double d = delay(rng);
      while (bg.running() && now_s() - t0 < d) sleep_s(0.001);
    }
    if (!bg.kill9()) break;  // it finished: nothing left to interrupt
    ++kills;
    bool mid_write = false;
    for (const std::string& name : list_dir(root)) {
      if (name.rfind(".tmp-", 0) == 0) mid_write = true;
      if (name.rfind("step_", 0) != 0) continue;
      const Inspect i = inspect(root + "/" + name);
      EXPECT_TRUE(i.ok()) << "after kill " << kills << ": " << name << " fails inspect\n" << i.proc;
      if (i.ok()) {
        EXPECT_EQ("step_" + fmt_step(i.info["step"].get<int64_t>()), name);
      }
    }
    kills_during_write += mid_write;
  }
  std::cout << "[e2e] " << kills << " kills, " << kills_during_write
            << " of them left a staging directory (killed during a checkpoint write)\n";
  EXPECT_GE(kills, 5) << "the run finished too fast to be interrupted";

  const auto r = train(tiny(run, sets, /*resume=*/true));
  ASSERT_EQ(r.exit_code, 0) << r;
  const Inspect fin = inspect(ckpt_dir(run, kSteps));
  ASSERT_TRUE(fin.ok()) << fin.proc;
  EXPECT_EQ(fin.tensor_hash(), ref_final.tensor_hash());
  const auto m = read_metrics(run);
  ASSERT_TRUE(has_steps_1_to_n(m, kSteps));
  EXPECT_EQ(losses(m), losses(read_metrics(ref_run)));
}

}  // namespace
}  // namespace mt::e2e
