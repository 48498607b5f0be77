// core_subprocess_test.cpp — Child::spawn runs a program with its output in
// a log; an exec that fails says which program and errno in that log and
// exits 127; and ChildSpec::kSameBinary runs the parent's own image whatever
// argv[0] names (a queue's children never run a binary rebuilt mid-run); a
// bare program name is found on PATH, and stdout may go to a file of its own.
#include "core/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/file_io.h"
#include "support/temp_dir.h"

namespace mt {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

std::string log_of(const TempDir& d) { return read_file(d / "log").value(); }

int wait_for(Child& c) {
  int code = -1;
  for (int i = 0; i < 3000 && !c.poll(&code); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return code;
}

TEST(Subprocess, RunsAProgramIntoItsLog) {
  TempDir d;
  ChildSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo hello $GREETING; exit 3"};
  spec.env = {{"GREETING", "there"}};
  spec.log_path = d / "log";
  auto c = Child::spawn(spec);
  ASSERT_TRUE(c) << c.status().message();
  EXPECT_EQ(wait_for(c.value()), 3);
  EXPECT_EQ(log_of(d), "hello there\n");
}

// A program named without a slash is found on PATH; stdout_path takes stdout alone, the log keeps stderr.
TEST(Subprocess, ProgramOnPathAndStdoutApart) {
  TempDir d;
  ChildSpec spec;
  spec.argv = {"sh", "-c", "echo result; echo progress >&2"};
  spec.log_path = d / "log";
  spec.stdout_path = d / "out";
  auto c = Child::spawn(spec);
  ASSERT_TRUE(c) << c.status().message();
  EXPECT_EQ(wait_for(c.value()), 0);
  EXPECT_EQ(read_file(d / "out").value(), "result\n");
  EXPECT_EQ(log_of(d), "progress\n");
}

TEST(Subprocess, AFailedExecNamesTheProgramAndErrno) {
  TempDir d;
  ChildSpec spec;
  spec.argv = {"/nonexistent/moetrain", "train"};
  spec.log_path = d / "log";
  auto c = Child::spawn(spec);
  ASSERT_TRUE(c) << c.status().message();
  EXPECT_EQ(wait_for(c.value()), 127);
  EXPECT_EQ(log_of(d), "exec /nonexistent/moetrain failed: errno 2\n");  // ENOENT
}

TEST(Subprocess, SameBinaryRunsTheParentsImage) {
  TempDir d;
  ChildSpec spec;
  // argv[0] names nothing that exists: only the parent's image can run.
  spec.argv = {"/gone/after/a/rebuild", "--gtest_list_tests", "--gtest_filter=Subprocess.*"};
  spec.exec_path = ChildSpec::kSameBinary;
  spec.log_path = d / "log";
  auto c = Child::spawn(spec);
  ASSERT_TRUE(c) << c.status().message();
  EXPECT_EQ(wait_for(c.value()), 0) << log_of(d);
  EXPECT_THAT(log_of(d), HasSubstr("SameBinaryRunsTheParentsImage"));
}

}  // namespace
}  // namespace mt
