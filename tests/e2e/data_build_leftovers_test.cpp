// data_build_leftovers_test.cpp — `moetrain data build --out DIR` removes
// the DIR.tmp-<pid> directories of builds whose process is gone (a crash's
// leftovers) and keeps those of live processes, names that only look alike,
// and other outputs' build directories; says so on stderr unless --quiet.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <cerrno>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/data_fixtures.h"
#include "support/e2e.h"

namespace mt {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace td = testdata;
namespace e2e = mt::e2e;

// The pid of a child that has exited and been reaped: a process that is gone.
pid_t dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

// A directory that looks like a build's, with a file in it.
void make_build_dir(const std::string& path) {
  std::filesystem::create_directories(path + "/buckets");
  td::write_file(path + "/buckets/partial.tok", "half a shard");
}

// A one-file corpus and its data.toml under dir; returns the config path.
std::string write_config(const e2e::TempDir& dir) {
  td::write_file(dir / "web.jsonl", td::labelled_jsonl({"web"}, 2, 8, 1, 30));
  td::write_file(dir / "data.toml", "[[input]]\npath = \"web.jsonl\"\n[tokenizer]\nvocab_size = 300\n");
  return dir / "data.toml";
}

e2e::ProcessResult build(const std::string& config, const std::string& out, bool quiet) {
  std::vector<std::string> argv = {e2e::moetrain_binary(), "data", "build", "--config", config, "--out", out};
  if (quiet) argv.push_back("--quiet");
  return e2e::run_process(argv, 120, e2e::kPassiveOmp);
}

TEST(DataBuildLeftovers, RemovesDeadBuildsKeepsLiveOnes) {
  e2e::TempDir dir;
  const std::string config = write_config(dir);
  const pid_t dead = dead_pid();
  const int rc = kill(dead, 0), err = errno;
  ASSERT_TRUE(rc == -1 && err == ESRCH) << "pid " << dead << " was reused already";
  const pid_t live = getpid();  // this test outlives the build
  const std::string out = dir / "ds";
  const std::string gone = out + ".tmp-" + std::to_string(dead), kept = out + ".tmp-" + std::to_string(live);
  // Not build directories of `out`: another output's, and names that only
  // start like one (kill(0, 0) would ask about our own process group).
  const std::vector<std::string> unrelated = {dir / ("other.tmp-" + std::to_string(dead)), out + ".tmp-0",
                                              out + ".tmp-12x", out + ".tmp-"};
  make_build_dir(gone);
  make_build_dir(kept);
  for (const std::string& u : unrelated) make_build_dir(u);

  const e2e::ProcessResult r = build(config, out, /*quiet=*/false);
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.err, HasSubstr("# data build: removed stale " + gone + " (process " + std::to_string(dead) +
                               " is gone)\n"));
  EXPECT_FALSE(std::filesystem::exists(gone));
  EXPECT_TRUE(std::filesystem::exists(kept + "/buckets/partial.tok")) << "a live process's build was removed";
  for (const std::string& u : unrelated) EXPECT_TRUE(std::filesystem::exists(u + "/buckets/partial.tok")) << u;
  EXPECT_TRUE(std::filesystem::exists(out + "/manifest.json"));
  EXPECT_THAT(r.err, Not(HasSubstr("removed stale " + kept)));
}

TEST(DataBuildLeftovers, QuietRemovesWithoutSaying) {
  e2e::TempDir dir;
  const std::string config = write_config(dir);
  const pid_t dead = dead_pid();
  const std::string out = dir / "ds", gone = out + ".tmp-" + std::to_string(dead);
  make_build_dir(gone);
  const e2e::ProcessResult r = build(config, out, /*quiet=*/true);
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_FALSE(std::filesystem::exists(gone));
  EXPECT_THAT(r.err, Not(HasSubstr("removed stale")));
}

// "--out ds/" assembles in ds.tmp-<pid> beside ds (not inside it, from
// where the final rename could not move it) and cleans up there too.
TEST(DataBuildLeftovers, TrailingSlashBuildsBesideTheOutput) {
  e2e::TempDir dir;
  const std::string config = write_config(dir);
  const pid_t dead = dead_pid();
  const std::string gone = dir / ("ds.tmp-" + std::to_string(dead));
  make_build_dir(gone);
  const e2e::ProcessResult r = build(config, dir / "ds/", /*quiet=*/false);
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_FALSE(std::filesystem::exists(gone));
  EXPECT_TRUE(std::filesystem::exists(dir / "ds/manifest.json"));
  EXPECT_EQ(e2e::list_dir(dir.path()), (std::vector<std::string>{"data.toml", "ds", "web.jsonl"}));
}

// Bad input leaves nothing: an input path that does not exist is refused
// with its name, and no DIR.tmp-<pid> (nor DIR) stays behind.
TEST(DataBuildLeftovers, MissingInputLeavesNothing) {
  e2e::TempDir dir;
  td::write_file(dir / "data.toml", "[[input]]\npath = \"no-such.jsonl\"\n[tokenizer]\nvocab_size = 300\n");
  const e2e::ProcessResult r = build(dir / "data.toml", dir / "ds", /*quiet=*/false);
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_THAT(r.err, HasSubstr("no-such.jsonl"));
  EXPECT_EQ(e2e::list_dir(dir.path()), (std::vector<std::string>{"data.toml"}));
}

}  // namespace
}  // namespace mt
