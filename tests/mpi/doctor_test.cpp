// doctor_test.cpp — health checks across ranks: `moetrain doctor` in one
// process and on 2 ranks passes with a row per check and rank; with one
// rank's GEMM off by 1e-3 it exits 1 naming that rank; and a training run
// with health.every = 2 whose rank 1 goes wrong at step 5 stops by step 6
// naming rank 1 and the step, with an event in events.jsonl. mpirun's exit
// code alone proves nothing, so every case reads what the ranks printed.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "support/mpi.h"

namespace mt::e2e {
namespace {

std::vector<std::string> doctor_argv(std::vector<std::string> extra) {
  std::vector<std::string> a = {moetrain_binary(), "doctor", "--json", "--memory-mib", "16",
                                "--bandwidth-bytes", "65536", "--timeout", "30"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

json parse_report(const ProcessResult& r) {
  const auto at = r.out.find('{');
  if (at == std::string::npos) return json();
  return json::parse(r.out.substr(at), nullptr, false);
}

// Every check ran on every rank (and one link row per pair).
void expect_rows_for_every_rank(const json& j, int np) {
  std::set<std::pair<std::string, int>> seen;
  int links = 0;
  for (const json& c : j["checks"]) {
    if (c["rank"].get<int>() < 0) ++links;
    else seen.insert({c["check"].get<std::string>(), c["rank"].get<int>()});
  }
  for (const char* check : {"gemm-reference", "gemm-ranks-agree", "nan-scan", "memory", "clock", "binary"})
    for (int r = 0; r < np; ++r) EXPECT_TRUE(seen.count({check, r})) << check << " missing for rank " << r;
  EXPECT_EQ(links, np * (np - 1) / 2);
}

TEST(Doctor, OneProcessPasses) {
  const auto r = run_process(doctor_argv({}), 60);
  ASSERT_EQ(r.exit_code, 0) << r;
  const json j = parse_report(r);
  ASSERT_TRUE(j.is_object()) << r;
  EXPECT_TRUE(j["ok"].get<bool>());
  expect_rows_for_every_rank(j, 1);
}

TEST(Doctor, TwoRanksPass) {
  const auto r = mpirun(2, doctor_argv({}), 120);
  EXPECT_EQ(r.exit_code, 0) << r;
  const json j = parse_report(r);
  ASSERT_TRUE(j.is_object()) << r;
  EXPECT_TRUE(j["ok"].get<bool>()) << r;
  EXPECT_EQ(j["ranks"].get<int>(), 2);
  expect_rows_for_every_rank(j, 2);
  EXPECT_NE(j["slowest_link"].get<std::string>().find("0 <-> 1"), std::string::npos) << j.dump(2);
  EXPECT_NE(r.err.find("all checks passed on 2 rank(s)"), std::string::npos) << r;
}

TEST(Doctor, WrongGemmRankIsNamed) {
  const auto r = mpirun(2, doctor_argv({"--inject-fault", "wronggemm:1"}), 120);
  EXPECT_NE(r.exit_code, 0) << r;
  const json j = parse_report(r);
  ASSERT_TRUE(j.is_object()) << r;
  EXPECT_FALSE(j["ok"].get<bool>());
  EXPECT_EQ(j["culprit_ranks"], json::array({1})) << j.dump(2);
  for (const json& c : j["checks"])
    if (c["check"] == "gemm-reference") EXPECT_EQ(c["pass"].get<bool>(), c["rank"].get<int>() != 1) << c.dump();
  EXPECT_NE(r.err.find("FAILED: culprit rank(s) 1: rank 1 (gemm-reference)"), std::string::npos) << r;
}

TEST(Doctor, PeriodicCheckStopsTrainingNamingTheRank) {
  TempDir tmp;
  const std::string dir = tmp / "run";
  const auto r = mpi_train(2,
                           {"--preset", "tiny-test", "--run-dir", dir, "--set", "train.threads=1", "--set",
                            "train.steps=20", "--set", "health.every=2", "--set", "health.at_start=true",
                            "--inject-fault", "wronggemm:1:5"},
                           120);
  EXPECT_FALSE(r.timed_out) << r;
  EXPECT_NE(r.exit_code, 0) << r;
  // Caught at the first check after step 5 (step 6), never later than step 7.
  EXPECT_NE(r.err.find("step 6: health check failed, culprit rank 1: rank 1: GEMM check failed"), std::string::npos)
      << r;
  // The steps before the fault were logged, none after the check.
  int64_t last = 0;
  for (const json& m : read_metrics(dir))
    if (m.is_object()) last = std::max<int64_t>(last, m.value("step", int64_t(0)));
  EXPECT_GE(last, 4);
  EXPECT_LE(last, 5);
  std::ifstream ev(dir + "/events.jsonl");
  std::string line;
  bool found = false;
  while (std::getline(ev, line)) {
    const json e = json::parse(line, nullptr, false);
    if (e.is_object() && e.value("event", "") == "health_check_failed") {
      found = true;
      EXPECT_EQ(e["step"].get<int64_t>(), 6);
      EXPECT_EQ(e["culprits"], json::array({1}));
    }
  }
  EXPECT_TRUE(found) << "no health_check_failed event in " << dir << "/events.jsonl";
}

}  // namespace
}  // namespace mt::e2e
