// ladder_cli_test.cpp — `moetrain ladder fit` as a user runs it: a small
// JSONL ladder (isoFLOP budgets, a benchmark accuracy) gives the documented
// JSON fit on stdout and in --out, the text table, and exit 2 with FILE:LINE
// and the field for bad input or options.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/e2e.h"
#include "support/ladder_synthetic.h"

namespace mt::e2e {
namespace {

using ::testing::HasSubstr;

ProcessResult ladder_fit(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {moetrain_binary(), "ladder", "fit"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, 120);
}

// 5 budgets x 5 sizes from the tests' known law, with an accuracy per run.
std::string ladder_jsonl() {
  std::vector<ladder::Run> runs =
      mt::testing::isoflop_runs(mt::testing::known_law(), mt::testing::logspace(1e18, 1e20, 5), 5, 4.0, 0.003, 12);
  mt::testing::add_accuracy(runs, "mc", ladder::Sigmoid{0.25, 3.0, 5.0}, 0.01, 12);
  std::string text;
  for (const ladder::Run& r : runs) {
    json j = {{"name", r.name},
              {"params", r.active_params},
              {"tokens", r.tokens},
              {"flops", r.flops},
              {"loss", r.loss},
              {"budget", r.budget},
              {"accuracy", {{"mc", r.accuracy.at("mc")}}}};
    text += j.dump() + "\n";
  }
  return text;
}

TEST(LadderCli, JsonFitFileAndText) {
  TempDir tmp;
  const std::string results = tmp / "results.jsonl", out = tmp / "fit.json";
  write_file(results, ladder_jsonl());
  const ProcessResult r = ladder_fit({results, "--bootstrap", "20", "--seed", "3", "--target-flops", "1e21",
                                      "--tokens-per-param", "50", "--chance", "mc=0.25", "--json", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["format"], "moetrain-ladder-fit");
  EXPECT_EQ(j["version"], 1);
  for (const char* key : {"E", "A", "B", "alpha", "beta"}) {
    ASSERT_TRUE(j["law"][key].is_number()) << key;
    ASSERT_TRUE(j["uncertainty"][key]["se"].is_number()) << key;
  }
  EXPECT_EQ(j["law"]["n"], "active");
  EXPECT_EQ(j["law"]["sparsity"], "none");
  EXPECT_FALSE(j["law"].contains("gamma"));
  EXPECT_NEAR(j["law"]["alpha"].get<double>(), 0.34, 0.05);
  EXPECT_NEAR(j["law"]["beta"].get<double>(), 0.30, 0.05);
  EXPECT_EQ(j["uncertainty"]["resamples"], 20);
  EXPECT_EQ(j["fit"]["runs_fitted"], 25);
  EXPECT_TRUE(j["isoflop"]["fitted"].get<bool>()) << j["isoflop"].dump();
  EXPECT_NEAR(j["isoflop"]["n_opt"]["exponent"].get<double>(), 0.30 / 0.64, 0.05);
  const json& opt = j["projection"]["compute_optimal"];
  EXPECT_NEAR(6 * opt["N"]["value"].get<double>() * opt["D"]["value"].get<double>(), 1e21, 1e12);
  EXPECT_TRUE(opt["loss"]["lo"].is_number());
  EXPECT_TRUE(opt["accuracy"]["mc"]["value"].is_number());
  EXPECT_NEAR(j["projection"]["at_tokens_per_param"]["tokens_per_param"]["value"].get<double>(), 50, 1e-9);
  EXPECT_TRUE(j["projection"]["isoflop"]["N"].is_number());
  ASSERT_EQ(j["downstream"].size(), 1u);
  EXPECT_EQ(j["downstream"][0]["floor"], 0.25);
  EXPECT_EQ(json::parse(read_file(out)), j);  // --out holds what --json printed

  const ProcessResult text = ladder_fit({results, "--bootstrap", "0"});
  ASSERT_EQ(text.exit_code, 0) << text;
  EXPECT_THAT(text.out, HasSubstr("L = E + A / N^alpha + B / D^beta"));
  EXPECT_THAT(text.out, HasSubstr("alpha"));
  EXPECT_THAT(text.out, HasSubstr("isoFLOP (approach 2, 5 budgets)"));
  EXPECT_THAT(text.out, HasSubstr("accuracy mc"));
}

// --html: a self-contained page whose charts hold every fitted run (once in
// the loss-vs-compute chart, once in the parity chart) and the projection.
TEST(LadderCli, HtmlReportShowsRunsFitAndProjection) {
  TempDir tmp;
  const std::string results = tmp / "results.jsonl", html = tmp / "fit.html";
  write_file(results, ladder_jsonl());
  const ProcessResult r = ladder_fit({results, "--bootstrap", "10", "--target-flops", "1e21", "--html", html});
  ASSERT_EQ(r.exit_code, 0) << r;
  const std::string page = read_file(html);
  ASSERT_FALSE(page.empty());
  EXPECT_EQ(page.find("<script"), std::string::npos);  // self-contained, no script
  size_t circles = 0;
  for (size_t at = page.find("<circle"); at != std::string::npos; at = page.find("<circle", at + 1)) ++circles;
  EXPECT_EQ(circles, 2 * 25 + 1u);  // 25 runs in two charts, one projection
  EXPECT_THAT(page, HasSubstr("Loss against training compute"));
  EXPECT_THAT(page, HasSubstr("Predicted against observed loss"));
  EXPECT_THAT(page, HasSubstr("projection"));
  EXPECT_THAT(page, HasSubstr("fitted law, compute-optimal L*(C)"));
  const ProcessResult bad = ladder_fit({results, "--bootstrap", "0", "--html", tmp / "no/such/dir/x.html"});
  EXPECT_EQ(bad.exit_code, 1) << bad;
}

// The same report in a real headless browser (Debian's Chromium, installed by
// scripts/install-deps.sh): the DOM it builds holds every point, and the page
// logs no error.
TEST(LadderCli, HtmlReportRendersInHeadlessChromium) {
  TempDir tmp;
  const std::string results = tmp / "results.jsonl", html = tmp / "fit.html";
  write_file(results, ladder_jsonl());
  ASSERT_EQ(ladder_fit({results, "--bootstrap", "0", "--target-flops", "1e21", "--html", html}).exit_code, 0);
  ASSERT_TRUE(fs::exists("/usr/bin/chromium")) << "chromium missing: scripts/install-deps.sh installs it";
  const ProcessResult r = run_process({"/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu",
                                       "--user-data-dir=" + (tmp / "profile"), "--enable-logging=stderr", "--v=0",
                                       "--dump-dom", "file://" + html},
                                      120);
  ASSERT_EQ(r.exit_code, 0) << r;
  size_t circles = 0;
  for (size_t at = r.out.find("<circle"); at != std::string::npos; at = r.out.find("<circle", at + 1)) ++circles;
  EXPECT_EQ(circles, 2 * 25 + 1u) << "the browser's DOM lacks points";
  EXPECT_THAT(r.out, HasSubstr("Loss against training compute"));
  EXPECT_EQ(r.err.find("Uncaught"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(":CONSOLE("), std::string::npos) << r.err;  // nothing logged to the page's console
}

// MoE runs: G = n_experts in {1, 4, 16} over a 4 x 4 (N_active, D) grid.
std::string moe_jsonl() {
  ladder::Law law = mt::testing::known_law();
  law.sparsity = ladder::Sparsity::kExperts;
  law.gamma = 0.2;
  const std::vector<ladder::Run> runs = mt::testing::grid_runs(
      law, mt::testing::logspace(1e7, 1e10, 4), mt::testing::logspace(1e9, 1e12, 4), 0.002, 4, {1.0, 4.0, 16.0});
  std::string text;
  for (const ladder::Run& r : runs) {
    const double g = r.total_params / r.active_params;
    json j = {{"active_params", r.active_params},
              {"total_params", r.total_params},
              {"n_experts", g},
              {"tokens", r.tokens},
              {"loss", r.loss}};
    text += j.dump() + "\n";
  }
  return text;
}

TEST(LadderCli, SparsityTermAndParameterChoice) {
  TempDir tmp;
  const std::string results = tmp / "moe.jsonl";
  write_file(results, moe_jsonl());
  const ProcessResult r = ladder_fit({results, "--sparsity-term", "--sparsity-g", "n-experts", "--bootstrap", "0",
                                      "--target-flops", "1e22", "--target-sparsity", "8", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["law"]["sparsity"], "n_experts");
  EXPECT_NEAR(j["law"]["gamma"].get<double>(), 0.2, 0.03);
  EXPECT_NEAR(j["law"]["alpha"].get<double>(), 0.34, 0.03);
  EXPECT_TRUE(j["uncertainty"].is_null());
  EXPECT_EQ(j["projection"]["target"]["sparsity"], 8);
  EXPECT_TRUE(j["projection"]["compute_optimal"]["loss"]["value"].is_number());

  const ProcessResult no_g = ladder_fit({results, "--sparsity-term", "--bootstrap", "0", "--target-flops", "1e22"});
  EXPECT_EQ(no_g.exit_code, 2) << no_g;
  EXPECT_THAT(no_g.err, HasSubstr("needs the target's G"));

  const ProcessResult total = ladder_fit({results, "--n", "total", "--bootstrap", "0", "--json"});
  ASSERT_EQ(total.exit_code, 0) << total;
  EXPECT_EQ(json::parse(total.out)["law"]["n"], "total");
}

TEST(LadderCli, BadInputExitsTwoNamingFileLineField) {
  TempDir tmp;
  const std::string results = tmp / "bad.jsonl";
  write_file(results, ladder_jsonl() + "{\"params\": 1e8, \"tokens\": 1e9, \"loss\": \"low\"}\n");
  const ProcessResult r = ladder_fit({results});
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_THAT(r.err, HasSubstr(results + ":26: field 'loss': expected a number"));

  const ProcessResult missing = ladder_fit({tmp / "nope.jsonl"});
  EXPECT_EQ(missing.exit_code, 2) << missing;
  EXPECT_THAT(missing.err, HasSubstr("cannot open results file"));

  const std::string good = tmp / "good.jsonl";
  write_file(good, ladder_jsonl());
  const ProcessResult sparse = ladder_fit({good, "--sparsity-term", "--bootstrap", "0"});
  EXPECT_EQ(sparse.exit_code, 2) << sparse;
  EXPECT_THAT(sparse.err, HasSubstr("different G"));
  const ProcessResult chance = ladder_fit({good, "--chance", "mc=2", "--bootstrap", "0"});
  EXPECT_EQ(chance.exit_code, 2) << chance;
  EXPECT_THAT(chance.err, HasSubstr("--chance: expected TASK=P"));

  const ProcessResult unwritable = ladder_fit({good, "--bootstrap", "0", "--out", tmp / "no/such/dir/fit.json"});
  EXPECT_EQ(unwritable.exit_code, 1) << unwritable;
  EXPECT_THAT(unwritable.err, HasSubstr("--out: "));
}

}  // namespace
}  // namespace mt::e2e

namespace mt::e2e {
namespace {

// `moetrain report DIR` on a ladder directory (DIR/results.jsonl): the fit,
// with a held-out rung shown predicted; `ladder fit --hold-out` prints it.
TEST(LadderCli, ReportOfALadderDirectoryShowsTheHeldOutRung) {
  TempDir tmp;
  fs::create_directories(tmp / "ladder");
  write_file(tmp / "ladder/results.jsonl",
             read_file(std::string(MT_SOURCE_DIR) + "/tests/golden/data/ladder_quickstart_results.jsonl"));
  const ProcessResult r = run_process({moetrain_binary(), "report", tmp / "ladder", "--hold-out", "r5"});
  ASSERT_EQ(r.exit_code, 0) << r;
  const std::string page = read_file(tmp / "ladder/report.html");
  EXPECT_NE(page.find("Held-out runs (not fitted, predicted)"), std::string::npos);
  EXPECT_NE(page.find("r5 (held out)"), std::string::npos);
  const ProcessResult fit = run_process({moetrain_binary(), "ladder", "fit", tmp / "ladder/results.jsonl", "--hold-out",
                                         "r5", "--bootstrap", "20"});
  ASSERT_EQ(fit.exit_code, 0) << fit;
  EXPECT_NE(fit.out.find("held out r5: observed 4.0428"), std::string::npos) << fit.out;
  const ProcessResult bad = run_process({moetrain_binary(), "ladder", "fit", tmp / "ladder/results.jsonl", "--hold-out",
                                         "r9"});
  EXPECT_EQ(bad.exit_code, 2) << bad;
  EXPECT_NE(bad.err.find("--hold-out r9: no run of that name"), std::string::npos) << bad;
}

}  // namespace
}  // namespace mt::e2e
