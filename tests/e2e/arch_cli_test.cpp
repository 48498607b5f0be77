// arch_cli_test.cpp — `moetrain arch compare` on a tiny spec (two candidates,
// two tiny rungs with two cooldown branches each, bench/tiny for one step):
// every factor recorded (bench, the np = 2 all-to-all share or the reason it
// was skipped, the hero plan, the ladder fit with its projection, decode
// tokens/s); the report renders in a real headless browser and `arch report`
// writes it again byte for byte; a second invocation measures nothing again;
// a comparison SIGKILLed mid-ladder and started again (at --jobs 1, the first
// ran at --jobs 2) ends with the same ladder results, fits and compare.json,
// byte for byte, given the same measured records; bad spec values are refused
// naming the file and key, before anything is written.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "support/e2e.h"

namespace mt::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string spec_file(const std::string& dir, const std::string& extra_arch = "", const std::string& extra = "") {
  write_file(dir + "/ladder.toml",
             std::string("[ladder]\nbase = \"") + MT_SOURCE_DIR +
                 "/configs/tiny-test.toml\"\n"
                 "set = [\"data.eval_frac=0.1\", \"train.threads=1\", \"model.window=16\", \"model.n_kv_heads=1\"]\n"
                 "tokens_per_param = 1.0\nhead_dim = 16\nexpert_ratio = 1.0\n"
                 "cooldowns = [0.25, 0.5]\n"
                 "[[rung]]\nname = \"r1\"\nd_model = 32\nn_layers = 1\n"
                 "[[rung]]\nname = \"r2\"\nd_model = 48\nn_layers = 2\n");
  const std::string path = dir + "/spec.toml";
  write_file(path, std::string("[arch]\nladder = \"ladder.toml\"\nbootstrap = 20\n") + extra_arch +
                       "[bench]\npreset = \"bench/tiny\"\nsteps = 1\n"
                       "[hero]\nmodel = \"" MT_SOURCE_DIR
                       "/configs/models/frontier-moe-1t.toml\"\n"
                       "cluster = \"" MT_SOURCE_DIR
                       "/configs/clusters/gb200-nvl72.toml\"\n"
                       "layout = \"" MT_SOURCE_DIR
                       "/configs/layouts/frontier-moe-nvl72.toml\"\n"
                       "flops = 3e24\n"
                       "[inference]\ndecode_tokens = 8\n"
                       "[[candidate]]\nname = \"swa\"\nlabel = \"GQA + SWA\"\n"
                       "ladder = [\"model.layer_pattern=\\\"LG\\\"\"]\n"
                       "[[candidate]]\nname = \"hybrid\"\nlabel = \"gated delta hybrid\"\n"
                       "ladder = [\"model.layer_pattern=\\\"DG\\\"\"]\nbench = [\"model.layer_pattern=\\\"DDDG\\\"\"]\n"
                       "hero = [\"model.layer_pattern=\\\"DDDG\\\"\"]\n" +
                       extra);
  return path;
}

ProcessResult compare(const std::string& spec, const std::string& out, const std::string& jobs) {
  return run_process({moetrain_binary(), "arch", "compare", spec, "--out", out, "--jobs", jobs, "--no-progress"}, 300);
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(ArchCli, TinyComparisonEndToEndAndKilledRestartIsIdentical) {
  TempDir tmp;
  const std::string spec = spec_file(tmp.path());
  const double t0 = now_s();
  const auto a = compare(spec, tmp / "a", "2");
  ASSERT_EQ(a.exit_code, 0) << a;
  std::cerr << "[test] tiny comparison: " << now_s() - t0 << " s\n";
  const std::string cmp_text = read_file(tmp / "a/compare.json");
  const json cmp = json::parse(cmp_text);
  EXPECT_EQ(cmp["rank_by"], "loss_at_equal_wallclock");
  ASSERT_EQ(cmp["candidates"].size(), 2u);
  std::set<int64_t> ranks;
  for (const json& c : cmp["candidates"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    ranks.insert(c["rank"].get<int64_t>());
    // (a) measured on this machine.
    EXPECT_GT(c["bench"]["tokens_per_s"].get<double>(), 0);
    EXPECT_GT(c["bench"]["mfu"].get<double>(), 0);
    EXPECT_LT(c["bench"]["mfu"].get<double>(), 1);
    // (c) measured: the all-to-all share at np = 2, or why not.
    if (c["ep_bench"].contains("skipped")) {
      EXPECT_FALSE(c["ep_bench"]["skipped"].get<std::string>().empty());
    } else {
      EXPECT_EQ(c["ep_bench"]["ranks"], 2);
      EXPECT_GT(c["ep_bench"]["comm_share"].get<double>(), 0);
      EXPECT_LT(c["ep_bench"]["comm_share"].get<double>(), 1);
    }
    // (b) and (c) planned at the hero layout.
    EXPECT_GT(c["plan"]["mfu"].get<double>(), 0.05);
    EXPECT_LT(c["plan"]["mfu"].get<double>(), 0.9);
    EXPECT_EQ(c["plan"]["ep"], 64);
    EXPECT_GT(c["plan"]["ep_comm_share"].get<double>(), 0);
    EXPECT_LE(c["plan"]["ep_exposed_share"].get<double>(), c["plan"]["ep_comm_share"].get<double>());
    // (d) six ladder points (two rungs, two branches each), fitted and projected with an interval.
    ASSERT_EQ(c["ladder"]["runs"].size(), 6u);
    ASSERT_TRUE(c["ladder"].contains("law")) << c["ladder"].dump();
    const json& l = c["projection"]["equal_compute"]["loss"];
    EXPECT_LE(l["lo"].get<double>(), l["value"].get<double>());
    EXPECT_GE(l["hi"].get<double>(), l["value"].get<double>());
    EXPECT_EQ(c["projection"]["curve"].size(), 25u);
    // Inference cost: the hero's cache at the context, and decoding measured on the largest rung.
    EXPECT_GT(c["inference"]["kv_cache_bytes_per_token"].get<double>(), 0);
    EXPECT_GT(c["inference"]["decode"]["decode_tokens_per_s"].get<double>(), 0);
    EXPECT_EQ(c["inference"]["decode"]["run"], "ladder/" + c["name"].get<std::string>() + "/r2");
  }
  EXPECT_EQ(ranks, (std::set<int64_t>{1, 2}));
  // The hybrid keeps a state instead of three layers' caches: fewer KV bytes per token at the hero.
  EXPECT_LT(cmp["candidates"][1]["inference"]["kv_cache_bytes_per_token"].get<double>(),
            cmp["candidates"][0]["inference"]["kv_cache_bytes_per_token"].get<double>());
  EXPECT_NE(a.out.find("ranked by loss_at_equal_wallclock"), std::string::npos) << a;

  // The report in a real headless browser: the factor table, both candidates' curves and runs.
  const std::string html = read_file(tmp / "a/report.html");
  ASSERT_TRUE(fs::exists("/usr/bin/chromium")) << "chromium missing: scripts/install-deps.sh installs it";
  const auto dom = run_process(
      {"/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + (tmp / "profile"),
       "--enable-logging=stderr", "--v=0", "--dump-dom", "file://" + tmp / "a/report.html"},
      120);
  ASSERT_EQ(dom.exit_code, 0) << dom;
  EXPECT_EQ(count(dom.out, "<svg"), 1u);
  EXPECT_EQ(count(dom.out, "<circle"), 12u) << "every ladder run of both candidates";
  EXPECT_EQ(count(dom.out, "<polyline") + count(dom.out, "<path"), 6u) << "fit and interval bounds per candidate";
  for (const char* text : {"The four factors side by side", "Projected loss curves", "Verdict",
                           "loss_at_equal_wallclock", "GQA + SWA", "gated delta hybrid"})
    EXPECT_NE(dom.out.find(text), std::string::npos) << text;
  EXPECT_EQ(dom.err.find("Uncaught"), std::string::npos) << dom.err;
  // `arch report` writes the same page again.
  fs::remove(tmp / "a/report.html");
  const auto rep = run_process({moetrain_binary(), "arch", "report", tmp / "a"});
  ASSERT_EQ(rep.exit_code, 0) << rep;
  EXPECT_EQ(read_file(tmp / "a/report.html"), html);

  // Again into the same directory: nothing measured or trained again, the same files.
  const std::string bench = read_file(tmp / "a/swa.bench.json");
  const auto again = compare(spec, tmp / "a", "2");
  ASSERT_EQ(again.exit_code, 0) << again;
  EXPECT_EQ(again.err.find("# arch:"), std::string::npos) << again;
  EXPECT_EQ(read_file(tmp / "a/compare.json"), cmp_text);
  EXPECT_EQ(read_file(tmp / "a/swa.bench.json"), bench);

  // b: the same comparison with a's measured records (bench, np = 2, decode), its ladders run at --jobs 1
  // and SIGKILLed at a random point once a ladder has recorded a result, then started again.
  fs::create_directories(tmp / "b");
  for (const std::string& name : list_dir(tmp / "a"))
    if (name.ends_with(".bench.json") || name.ends_with(".ep.json") || name.ends_with(".decode.json") ||
        name == "moetrain-owner.json")
      fs::copy_file(tmp / ("a/" + name), tmp / ("b/" + name));
  Background bg({moetrain_binary(), "arch", "compare", spec, "--out", tmp / "b", "--jobs", "1", "--no-progress"},
                tmp / "b.out", tmp / "b.err");
  const double t1 = now_s();
  auto some_result = [&] {
    for (const char* c : {"swa", "hybrid"})
      if (fs::exists(tmp / ("b/ladder/" + std::string(c) + "/results.jsonl"))) return true;
    return false;
  };
  while (bg.running() && !some_result() && now_s() - t1 < 120) sleep_s(0.01);
  std::mt19937 rng(std::random_device{}());
  // Within a second of the first result: the other eleven runs (each its own process) take longer, so the kill
  // lands mid-comparison; one that could not land is a failure, not a skip that would pass unseen.
  sleep_s(std::uniform_real_distribution<double>(0.0, 1.0)(rng));
  ASSERT_TRUE(bg.kill9()) << "the comparison finished before it could be killed";
  EXPECT_FALSE(fs::exists(tmp / "b/compare.json"));
  const auto resumed = compare(spec, tmp / "b", "1");
  ASSERT_EQ(resumed.exit_code, 0) << resumed;
  EXPECT_EQ(resumed.err.find("bench"), std::string::npos) << "measured records are reused: " << resumed;
  for (const char* c : {"swa", "hybrid"}) {
    EXPECT_EQ(read_file(tmp / ("b/ladder/" + std::string(c) + "/results.jsonl")),
              read_file(tmp / ("a/ladder/" + std::string(c) + "/results.jsonl")))
        << c << ": --jobs 1 after a kill against --jobs 2";
    EXPECT_EQ(read_file(tmp / ("b/" + std::string(c) + ".fit.json")),
              read_file(tmp / ("a/" + std::string(c) + ".fit.json")));
  }
  EXPECT_EQ(read_file(tmp / "b/compare.json"), cmp_text);
}

TEST(ArchCli, BadSpecsAreRefusedNamingTheKey) {
  TempDir tmp;
  struct Case {
    std::string arch, extra, want;
  };
  const std::vector<Case> cases = {
      {"rank_by = \"fastest\"\n", "", "arch.rank_by"},
      {"level = 1.5\n", "", "arch.level"},
      {"seed = -1\n", "", "arch.seed"},
      {"", "[[candidate]]\nname = \"swa\"\n", "candidate[2].name"},
      {"", "[[candidate]]\nname = \"a/b\"\n", "candidate[2].name"},
      {"", "[[candidate]]\nname = \"c\"\nladder = [\"model.nope=1\"]\n", "model.nope"},
      {"", "[[candidate]]\nname = \"c\"\nbench = [\"model.nope=1\"]\n", "candidate[2].bench"},
      {"", "[[candidate]]\nname = \"c\"\nhero = [\"model.layer_pattern=\\\"Q\\\"\"]\n", "candidate c: hero plan"},
      {"colour = \"red\"\n", "", "arch.colour"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.want);
    const std::string spec = spec_file(tmp.path(), c.arch, c.extra);
    const auto r = compare(spec, tmp / "out", "1");
    EXPECT_EQ(r.exit_code, 2) << r;
    EXPECT_NE(r.err.find(c.want), std::string::npos) << r;
    EXPECT_FALSE(fs::exists(tmp / "out")) << "a refused comparison writes nothing";
  }
  const auto missing = run_process({moetrain_binary(), "arch", "compare", tmp / "missing.toml", "--out", tmp / "out"});
  EXPECT_EQ(missing.exit_code, 2) << missing;
  const auto bad_preset = compare(spec_file(tmp.path(), "", "[bench]\n"), tmp / "out", "1");  // [bench] twice
  EXPECT_EQ(bad_preset.exit_code, 2) << bad_preset;
  const auto no_report = run_process({moetrain_binary(), "arch", "report", tmp / "nothing"});
  EXPECT_EQ(no_report.exit_code, 2) << no_report;
}

}  // namespace
}  // namespace mt::e2e
