// sweep_cli_test.cpp — `moetrain sweep` on the tiny model: every run
// recorded in results.jsonl with its settings, cost (training FLOPs) and
// final held-out loss, the front in front.json; runs that diverge are
// recorded with the reason and the search goes on; the settings for chosen
// costs are written, extrapolated beyond the runs and trained; the
// results do not depend on --jobs, and a sweep SIGKILLed mid-run and started
// again ends with the same results; bad sweep files are refused naming the
// key; another sweep into the same --out is refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/e2e.h"

namespace mt::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// lr and tokens, the head count as a choice whose second value does not
// divide d_model = 64 (a config the trainer refuses: its cost is unknown, so
// it is never proposed), and the embedding's lr as a choice whose second
// value makes the run diverge at its second step on any CPU (the first
// runs, drawn before any loss is seen, include it).
std::string sweep_file(const std::string& dir, const std::string& extra = "") {
  const std::string path = dir + "/sweep.toml";
  write_file(path, "[sweep]\nbase = \"" + std::string(MT_SOURCE_DIR) +
                       "/configs/tiny-test.toml\"\n"
                       "set = [\"train.threads=1\", \"data.eval_frac=0.1\"]\n"
                       "seed = 3\nruns = 8\nbatch = 2\ninitial = 4\n" +
                       (extra.empty() ? std::string("at_costs = [2e9]\n") : extra) +
                       "\n[[param]]\nkey = \"train.lr\"\nscale = \"log\"\nmin = 1e-4\nmax = 0.1\ncenter = 3e-3\n"
                       "\n[[param]]\nkey = \"tokens\"\nscale = \"log_int\"\nmin = 1024\nmax = 8192\ncenter = 2048\n"
                       "\n[[param]]\nkey = \"model.n_heads\"\nscale = \"choice\"\nchoices = [\"4\", \"6\"]\n"
                       "center = 0\nradius = 1.0\n"
                       "\n[[param]]\nkey = \"optim.aux_lr\"\nscale = \"choice\"\nchoices = [\"3e-3\", \"1e30\"]\n"
                       "center = 0\nradius = 1.0\n");
  return path;
}

std::vector<json> rows_of(const std::string& text) {
  std::vector<json> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) rows.push_back(json::parse(line));
  return rows;
}

TEST(SweepCli, RecordsEveryRunRefusalsIncludedAndJobsChangeNothing) {
  TempDir tmp;
  // 2e10 FLOPs lies beyond every run (8,192 tokens at most): extrapolated, then trained.
  const std::string sweep = sweep_file(tmp.path(), "at_costs = [2e9, 2e10]\ncheck_at_costs = true\n");
  const auto one = run_process({moetrain_binary(), "sweep", sweep, "--out", tmp / "one", "--no-progress"}, 300);
  ASSERT_EQ(one.exit_code, 0) << one;
  const auto two =
      run_process({moetrain_binary(), "sweep", sweep, "--out", tmp / "two", "--jobs", "2", "--no-progress"}, 300);
  ASSERT_EQ(two.exit_code, 0) << two;
  const std::string results = read_file(tmp / "one/results.jsonl");
  EXPECT_EQ(read_file(tmp / "two/results.jsonl"), results);
  EXPECT_EQ(read_file(tmp / "two/front.json"), read_file(tmp / "one/front.json"));  // the checks' losses too
  const auto rows = rows_of(results);
  ASSERT_EQ(rows.size(), 8u);
  int diverged = 0, trained = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const json& r = rows[i];
    EXPECT_EQ(r["index"], int64_t(i));
    EXPECT_EQ(r["round"], int64_t(i / 2));
    EXPECT_EQ(r["settings"]["model.n_heads"], "4") << r.dump();
    if (r["failed"].get<bool>()) {
      EXPECT_EQ(r["settings"]["optim.aux_lr"], "1e30") << r.dump();
      EXPECT_NE(r["reason"].get<std::string>().find("diverged"), std::string::npos) << r.dump();
      EXPECT_GT(r["cost"].get<double>(), 0.0);
      ++diverged;
    } else {
      EXPECT_GT(r["cost"].get<double>(), 0.0);
      EXPECT_TRUE(r["value"].is_number());
      EXPECT_EQ(r["resolved"]["tokens"].get<double>(), double(r["steps"].get<int64_t>() * 4 * 64));
      EXPECT_TRUE(fs::exists(tmp / ("one/" + r["name"].get<std::string>() + "/metrics.jsonl")));
      ++trained;
    }
  }
  std::printf("# sweep: %d runs trained, %d diverged\n", trained, diverged);
  EXPECT_GT(diverged, 0);
  EXPECT_GT(trained, 2);
  const json front = json::parse(read_file(tmp / "one/front.json"));
  ASSERT_FALSE(front["runs"].empty());
  double last_cost = 0, last_value = INFINITY;
  for (const json& r : front["runs"]) {  // cheapest first, each better than the cheaper ones
    EXPECT_GE(r["cost"].get<double>(), last_cost);
    EXPECT_LT(r["value"].get<double>(), last_value);
    last_cost = r["cost"].get<double>();
    last_value = r["value"].get<double>();
  }
  EXPECT_EQ(front["failed_runs"].get<int64_t>(), diverged);
  EXPECT_TRUE(front["scaling"].contains("train.lr"));
  // A run config for each chosen cost, which train reads as any other, costing
  // what was asked (up to whole steps), with the front's predicted loss; both
  // trained afterwards (check_at_costs).
  ASSERT_EQ(front["at_costs"].size(), 2u);
  size_t predicted = 0;
  for (const json& a : front["at_costs"]) {
    const std::string settings = tmp / ("one/" + a["file"].get<std::string>());
    const auto show = run_process({moetrain_binary(), "config", "show", "run", settings});
    EXPECT_EQ(show.exit_code, 0) << show;
    const double steps = a["resolved"]["tokens"].get<double>() / (4 * 64);
    EXPECT_NEAR(a["config_cost"].get<double>() / a["cost"].get<double>(), 1.0, 0.5 / steps + 1e-9) << a.dump();
    EXPECT_TRUE(a["observed"].is_number()) << a.dump();
    EXPECT_TRUE(fs::exists(tmp / ("one/" + a["run"].get<std::string>() + "/metrics.jsonl"))) << a.dump();
    predicted += a["predicted_value"].is_number() ? 1 : 0;
  }
  EXPECT_TRUE(front["at_costs"][1]["extrapolated"].get<bool>());
  EXPECT_GT(front["at_costs"][1]["resolved"]["tokens"].get<double>(), 8192.0);  // past the tokens' bound
  EXPECT_EQ(front["loo"].size(), size_t(trained));
  // The report, as `moetrain report` writes it again, in a real headless browser.
  const std::string html = read_file(tmp / "one/report.html");
  const auto rep = run_process({moetrain_binary(), "report", tmp / "one", "--out", tmp / "again.html"});
  ASSERT_EQ(rep.exit_code, 0) << rep;
  EXPECT_EQ(read_file(tmp / "again.html"), html);
  ASSERT_TRUE(fs::exists("/usr/bin/chromium")) << "chromium missing: scripts/install-deps.sh installs it";
  const auto dom = run_process(
      {"/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + (tmp / "profile"),
       "--enable-logging=stderr", "--v=0", "--dump-dom", "file://" + tmp / "one/report.html"},
      120);
  ASSERT_EQ(dom.exit_code, 0) << dom;
  size_t circles = 0;
  for (size_t at = dom.out.find("<circle"); at != std::string::npos; at = dom.out.find("<circle", at + 1)) ++circles;
  // Every trained run, the front, every run's leave-one-out prediction, the front in each numeric param's chart.
  const size_t numeric = front["scaling"].size();
  // ... and each chosen cost's prediction and trained loss.
  EXPECT_EQ(circles, size_t(trained) + front["runs"].size() * (1 + numeric) + size_t(trained) + predicted +
                         front["at_costs"].size())
      << "the browser's DOM lacks points";
  for (const char* title : {"Held-out loss against cost", "Predicted against observed loss", "train.lr on the front",
                            "Settings for chosen costs", "Every run"})
    EXPECT_NE(dom.out.find(title), std::string::npos) << title;
  EXPECT_EQ(dom.err.find("Uncaught"), std::string::npos) << dom.err;
  // Again into the same directory: nothing to do, the same files.
  const auto again = run_process({moetrain_binary(), "sweep", sweep, "--out", tmp / "one", "--no-progress"}, 120);
  ASSERT_EQ(again.exit_code, 0) << again;
  EXPECT_EQ(read_file(tmp / "one/results.jsonl"), results);
  EXPECT_EQ(read_file(tmp / "one/report.html"), html);
  // Another sweep into it is refused.
  const auto other = run_process(
      {moetrain_binary(), "sweep", sweep, "--out", tmp / "one", "--set", "sweep.seed=4", "--no-progress"}, 60);
  EXPECT_EQ(other.exit_code, 2) << other;
}

TEST(SweepCli, KilledSweepResumesToTheSameResults) {
  TempDir tmp;
  const std::string sweep = sweep_file(tmp.path());
  const auto clean = run_process({moetrain_binary(), "sweep", sweep, "--out", tmp / "a", "--no-progress"}, 300);
  ASSERT_EQ(clean.exit_code, 0) << clean;
  Background bg({moetrain_binary(), "sweep", sweep, "--out", tmp / "b", "--jobs", "2", "--no-progress"}, tmp / "b.out",
                tmp / "b.err");
  const double t0 = now_s();
  // Kill it once the third round's runs have started (results of two rounds recorded).
  while (bg.running() && !fs::exists(tmp / "b/s004") && now_s() - t0 < 120) sleep_s(0.005);
  const bool killed = bg.kill9();
  if (!killed) GTEST_SKIP() << "the sweep finished before it could be killed";
  const auto resumed = run_process({moetrain_binary(), "sweep", sweep, "--out", tmp / "b", "--no-progress"}, 300);
  ASSERT_EQ(resumed.exit_code, 0) << resumed;
  EXPECT_EQ(read_file(tmp / "b/results.jsonl"), read_file(tmp / "a/results.jsonl"));
}

TEST(SweepCli, BadSweepFilesAreRefusedNamingTheKey) {
  TempDir tmp;
  struct Case {
    std::string extra_param, expect;
  };
  const std::vector<Case> cases = {
      {"\n[[param]]\nkey = \"optim.nope\"\nscale = \"log\"\nmin = 1\nmax = 2\ncenter = 1.5\n", "optim.nope"},
      {"\n[[param]]\nkey = \"train.warmup_steps\"\nscale = \"int\"\nmin = 0\nmax = 10\ncenter = 20\n",
       "param[4].center"},
      {"\n[[param]]\nkey = \"train.lr\"\nscale = \"log\"\nmin = 1e-3\nmax = 1e-2\ncenter = 5e-3\n", "swept twice"},
      {"\n[[param]]\nkey = \"width\"\nscale = \"log\"\nmin = 32\nmax = 128\ncenter = 64\n", "param[4].scale"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expect);
    const std::string path = sweep_file(tmp.path());
    write_file(path, read_file(path) + c.extra_param);
    const auto r = run_process({moetrain_binary(), "sweep", path, "--out", tmp / "out", "--no-progress"}, 60);
    EXPECT_EQ(r.exit_code, 2) << r;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << r;
    EXPECT_FALSE(fs::exists(tmp / "out/results.jsonl"));
  }
}

}  // namespace
}  // namespace mt::e2e
