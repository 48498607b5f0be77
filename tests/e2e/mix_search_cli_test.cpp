// mix_search_cli_test.cpp — `moetrain mix search` through the real binary on
// synthetic corpora: (1) three topics of disjoint vocabularies and a target
// that is the held-out loss of topic a alone, with a hero budget that lets a
// be at most about half of the mixture — the best mixture is known by
// construction (a at its cap), and the search must find it; every proxy's
// mixture passes `data plan` at the hero scale (no data repeated) and every
// ledger matches its mixture within one sequence; (2) a search SIGKILLed in
// the middle and restarted with --jobs 2 ends with the same files as an
// uninterrupted one with --jobs 1;
// (3) 200 buckets (40 topics x 5 quality levels), searched by topic; (4) a
// target of a task's error rate and a bucket's bits per byte: every proxy
// records the figures `moetrain eval` gives its checkpoint, and its target is
// their weighted sum; (5) a target that is a held-out text set, not a bucket.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "support/data_fixtures.h"
#include "support/e2e.h"

namespace mt::e2e {
namespace {

using nlohmann::json;

// Train tokens + documents of one bucket (what one epoch of it gives).
double available_tokens(const std::string& dataset, const std::string& bucket) {
  const json m = json::parse(read_file(dataset + "/manifest.json"));
  for (const json& b : m["buckets"])
    if (b["name"] == bucket) return b["train"]["tokens"].get<double>() + b["train"]["documents"].get<double>();
  ADD_FAILURE() << "no bucket " << bucket;
  return 0;
}

struct SearchFiles {
  std::string dataset, base, search;
};

// A dataset, a hero mixture, a base run config and a search file in `dir`.
SearchFiles make_setup(const std::string& dir, const std::vector<std::string>& topics, int n_quality, int per_bucket,
                 int words, int64_t hero_tokens, const std::string& search_keys) {
  SearchFiles s;
  s.dataset = testdata::build_labelled_dataset(dir, testdata::labelled_jsonl(topics, n_quality, per_bucket, 5, words),
                                               0.25, 320);
  write_file(dir + "/hero.toml", "total_tokens = " + std::to_string(hero_tokens) +
                                     "\nscale = \"1\"\nmax_epochs = 1\nseed = 3\n[weights]\n\"*\" = 1\n");
  s.base = dir + "/base.toml";
  write_file(s.base, read_file(std::string(MT_SOURCE_DIR) + "/configs/tiny-test.toml") +
                         "dataset = \"" + s.dataset + "\"\nmixture = \"" + dir + "/hero.toml\"\n");
  // tiny-test's [data] table ends the file: the two keys above land in it.
  s.search = dir + "/search.toml";
  write_file(s.search, "[search]\nbase = \"base.toml\"\nmixture = \"hero.toml\"\n" +
                           search_keys);
  return s;
}

json search_json(const std::string& out) { return json::parse(read_file(out + "/search.json")); }

TEST(MixSearch, FindsTheMixtureKnownBestByConstruction) {
  TempDir tmp;
  // Cap a at about half: the hero budget is twice what bucket a holds.
  std::string probe_dir = tmp / "probe";
  const std::string probe = testdata::build_labelled_dataset(
      probe_dir, testdata::labelled_jsonl({"a", "b", "c"}, 1, 160, 5, 70), 0.25, 320);
  const double avail_a = available_tokens(probe, "a/q0");
  const SearchFiles s =
      make_setup(tmp.path(), {"a", "b", "c"}, 1, 160, 70, int64_t(2 * avail_a),
                 "proxies = 10\nholdout = 3\nconcentration = 2.0\nregressor = \"loglinear\"\nmethod = \"optimum\"\n"
                 "replicates = 2\nverify_seeds = 2\ntransfer_scale = 2\ntransfer_proxies = 4\n[target]\n\"a/*\" = 1\n");
  const auto r = run_process({moetrain_binary(), "mix", "search", s.search, "--out", tmp / "out", "--jobs", "2",
                              "--no-progress"},
                             600);
  ASSERT_EQ(r.exit_code, 0) << r;
  const json j = search_json(tmp / "out");
  const auto names = j["buckets"]["names"].get<std::vector<std::string>>();
  ASSERT_EQ(names.size(), 3u);
  const size_t a = size_t(std::find(names.begin(), names.end(), "a/q0") - names.begin());
  ASSERT_LT(a, names.size());
  const double cap = j["buckets"]["cap"][a].get<double>();
  const double best_a = j["best"]["weights"][a].get<double>();
  EXPECT_GT(cap, 0.4);
  EXPECT_LT(cap, 0.5);
  EXPECT_LE(best_a, cap + 1e-9);          // never past what the hero run can read once
  EXPECT_GT(best_a, cap - 0.05) << j["best"].dump();  // and as much of a as allowed: the known best
  EXPECT_GT(best_a, j["buckets"]["natural"][a].get<double>() + 0.05);
  // Trained, the chosen mixture beats the natural one on the target.
  EXPECT_LT(j["verify"]["best"]["actual"].get<double>(), j["verify"]["natural"]["actual"].get<double>());
  // No proxy repeats data at the hero scale; every ledger matches its mixture.
  for (const std::string& f : list_dir(tmp / "out/mixtures")) {
    const auto plan = run_process({moetrain_binary(), "data", "plan", s.dataset, "--mixture", tmp / ("out/mixtures/" + f),
                                   "--config", s.base});
    EXPECT_EQ(plan.exit_code, 0) << f << "\n" << plan;
  }
  std::istringstream in(read_file(tmp / "out/proxies.jsonl"));
  int n = 0;
  for (std::string line; std::getline(in, line); ++n) {
    const json p = json::parse(line);
    EXPECT_LE(p["ledger_max_deviation"].get<double>(), 1.0) << line;
  }
  EXPECT_EQ(n, 22);  // 10 proxies, 2 replicates, natural and best with 2 seeds each, 4 + 2 at twice the tokens
  // At twice the tokens (the same schedules read further, ledgers checked
  // like the proxies'): the ranking across the scales, and the choice still
  // better than natural.
  const json& t = j["transfer"];
  EXPECT_EQ(t["scale"].get<int64_t>(), 2);
  ASSERT_EQ(t["targets"].size(), 4u) << t.dump();
  EXPECT_TRUE(t["spearman"].is_number());
  EXPECT_TRUE(t["best_beats_natural"].get<bool>()) << t.dump();
  for (const json& pair : t["targets"])
    EXPECT_LT(pair[1].get<double>(), pair[0].get<double>()) << "more tokens, lower loss";
  EXPECT_NE(r.err.find("# scale transfer (x2, 4 proxies): Spearman"), std::string::npos) << r.err;
  // The seed noise, measured on the replicated proxies; a gain clear of it
  // and of 0, so the regressor's mixture is the one written; the trained
  // difference with its standard error over the seeds.
  ASSERT_EQ(j["noise"]["pairs"].size(), 2u) << j["noise"].dump();
  EXPECT_GT(j["noise"]["sd"].get<double>(), 0.0);
  EXPECT_GT(j["gain"]["lo"].get<double>(), 0.0) << j["gain"].dump();
  EXPECT_EQ(j["choice"]["kept"], "best") << j["choice"].dump();
  EXPECT_EQ(read_file(tmp / "out/best-mixture.toml"), read_file(tmp / "out/mixtures/best.toml"));
  EXPECT_EQ(j["verify"]["best"]["seeds"].size(), 2u);
  EXPECT_LT(j["verify"]["difference"]["mean"].get<double>(), 0.0);
  EXPECT_GT(j["verify"]["difference"]["std_error"].get<double>(), 0.0);
  EXPECT_NE(r.err.find("# choice: predicted gain over natural"), std::string::npos) << r.err;
  // Every proxy a distinct mixture within the caps, and the draws reported.
  EXPECT_EQ(j["sampling"]["distinct"].get<int64_t>(), 10) << j["sampling"].dump();
  EXPECT_GE(j["sampling"]["min_pair_distance"].get<double>(), j["config"]["min_distance"].get<double>());
  EXPECT_NE(r.err.find("# proxies: 10 distinct proxies"), std::string::npos) << r.err;
  EXPECT_TRUE(j["regressors"]["loglinear"].contains("spearman"));
  // The report, as `moetrain report` writes it again, in a real headless browser:
  // 3 held-out proxies x 2 regressors and the 2 trained mixtures are points,
  // and so are the 4 proxies and 2 mixtures trained at both scales.
  const std::string html = read_file(tmp / "out/report.html");
  const auto again = run_process({moetrain_binary(), "report", tmp / "out", "--out", tmp / "again.html"});
  ASSERT_EQ(again.exit_code, 0) << again;
  EXPECT_EQ(read_file(tmp / "again.html"), html);
  ASSERT_TRUE(fs::exists("/usr/bin/chromium")) << "chromium missing: scripts/install-deps.sh installs it";
  const auto dom = run_process({"/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu",
                                "--user-data-dir=" + (tmp / "profile"), "--enable-logging=stderr", "--v=0",
                                "--dump-dom", "file://" + tmp / "out/report.html"},
                               120);
  ASSERT_EQ(dom.exit_code, 0) << dom;
  size_t circles = 0;
  for (size_t at = dom.out.find("<circle"); at != std::string::npos; at = dom.out.find("<circle", at + 1)) ++circles;
  EXPECT_EQ(circles, 3 * 2 + 2u + 4 + 2) << "the browser's DOM lacks points";
  EXPECT_NE(dom.out.find("Predicted against actual target"), std::string::npos);
  EXPECT_NE(dom.out.find("Target at the proxy scale and at x2 the tokens"), std::string::npos);
  for (const char* row : {"seed noise", "predicted gain over natural", "trained difference, chosen - natural",
                          "scale transfer (x2 the tokens)"})
    EXPECT_NE(dom.out.find(row), std::string::npos) << row;
  EXPECT_EQ(dom.err.find("Uncaught"), std::string::npos) << dom.err;
}

TEST(MixSearch, KilledSearchResumesToTheSameFiles) {
  TempDir tmp;
  // Replicate seeds and a second scale in the mix: every kind of run is queued.
  const SearchFiles s = make_setup(tmp.path(), {"a", "b", "c"}, 1, 100, 60, 40000,
                                   "proxies = 6\nholdout = 2\nverify = false\ncandidates = 2000\ntop_k = 20\n"
                                   "replicates = 1\ntransfer_scale = 2\ntransfer_proxies = 3\n");
  const auto clean = run_process({moetrain_binary(), "mix", "search", s.search, "--out", tmp / "a", "--no-progress"}, 600);
  ASSERT_EQ(clean.exit_code, 0) << clean;
  Background bg({moetrain_binary(), "mix", "search", s.search, "--out", tmp / "b", "--no-progress"}, tmp / "b.out",
                tmp / "b.err");
  const double t0 = now_s();
  while (bg.running() && !fs::exists(tmp / "b/p003/checkpoints") && now_s() - t0 < 120) sleep_s(0.005);
  if (!bg.kill9()) GTEST_SKIP() << "the search finished before it could be killed";
  // Resumed with two runs at once: the files of one at a time.
  const auto resumed = run_process(
      {moetrain_binary(), "mix", "search", s.search, "--out", tmp / "b", "--jobs", "2", "--no-progress"}, 600);
  ASSERT_EQ(resumed.exit_code, 0) << resumed;
  for (const char* f : {"proxies.jsonl", "search.json", "best-mixture.toml", "report.html"})
    EXPECT_EQ(read_file(tmp / (std::string("b/") + f)), read_file(tmp / (std::string("a/") + f))) << f;
}

// Mixture reuse: with bucket c marked changed, only c and one virtual domain
// holding a and b at the previous mixture's proportions vary.
TEST(MixSearch, ReuseVariesOnlyTheChangedBuckets) {
  TempDir tmp;
  const SearchFiles s = make_setup(tmp.path(), {"a", "b", "c"}, 1, 100, 60, 40000,
                                   "proxies = 5\nholdout = 1\nverify = false\ncandidates = 2000\ntop_k = 20\n"
                                   "[reuse]\nprevious = \"previous.toml\"\nchanged = [\"c/*\"]\n");
  write_file(tmp / "previous.toml", "total_tokens = 40000\nscale = \"1\"\n[weights]\n\"a/q0\" = 0.6\n\"b/q0\" = 0.2\n"
                                    "\"c/q0\" = 0.2\n");
  const auto r = run_process({moetrain_binary(), "mix", "search", s.search, "--out", tmp / "out", "--no-progress"}, 600);
  ASSERT_EQ(r.exit_code, 0) << r;
  const json j = search_json(tmp / "out");
  ASSERT_EQ(j["domains"].size(), 2u);
  EXPECT_EQ(j["domains"][0]["name"], "c/q0");
  EXPECT_EQ(j["domains"][1]["name"], "unchanged");
  const auto names = j["buckets"]["names"].get<std::vector<std::string>>();
  auto at = [&](const std::string& n) { return size_t(std::find(names.begin(), names.end(), n) - names.begin()); };
  const json& w = j["best"]["weights"];
  EXPECT_NEAR(w[at("a/q0")].get<double>() / w[at("b/q0")].get<double>(), 3.0, 1e-9);  // kept as before
  for (const json& p : j["proxies"])
    EXPECT_NEAR(p["weights"][at("a/q0")].get<double>() / p["weights"][at("b/q0")].get<double>(), 3.0, 1e-9);
  // Nothing changed: a clear refusal before any training.
  write_file(tmp / "search2.toml", "[search]\nbase = \"base.toml\"\nmixture = \"hero.toml\"\nproxies = 5\nholdout = 1\n"
                                   "[reuse]\nprevious = \"previous.toml\"\n");
  const auto none = run_process({moetrain_binary(), "mix", "search", tmp / "search2.toml", "--out", tmp / "out2"});
  EXPECT_EQ(none.exit_code, 2) << none;
  EXPECT_NE(none.err.find("[reuse]"), std::string::npos) << none;
  EXPECT_FALSE(fs::exists(tmp / "out2")) << "a refused search leaves nothing";
}

// Issue 44, item 2: a search re-run after its proxies' config changed
// (model.d_model 64 -> 32) reused the old proxies, whose config.toml still
// said 64. It is refused naming the key; more proxies continue the search.
TEST(MixSearch, AChangedSearchIsRefusedAndMoreProxiesContinue) {
  TempDir tmp;
  const SearchFiles s = make_setup(tmp.path(), {"a", "b"}, 1, 100, 60, 20000,
                                   "proxies = 4\nholdout = 1\nverify = false\ncandidates = 200\ntop_k = 5\n");
  auto search = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = {moetrain_binary(), "mix", "search", s.search, "--out", tmp / "out", "--no-progress"};
    a.insert(a.end(), extra.begin(), extra.end());
    return run_process(a, 600);
  };
  const auto first = search({});
  ASSERT_EQ(first.exit_code, 0) << first;
  const std::string proxies = read_file(tmp / "out/proxies.jsonl");
  const auto changed = search({"--set", "search.set=[\"model.d_model=32\"]"});
  EXPECT_EQ(changed.exit_code, 2) << changed;
  EXPECT_NE(changed.err.find("base.model.d_model = 64 -> 32"), std::string::npos) << changed;
  EXPECT_EQ(read_file(tmp / "out/proxies.jsonl"), proxies);
  const auto more = search({"--set", "search.proxies=5"});
  EXPECT_EQ(more.exit_code, 0) << more;
  // Noise and transfer settings that cannot work are refused before anything trains, naming the key.
  for (const auto& [set, key] : {std::pair{"search.replicates=9", "search.replicates"},
                                 std::pair{"search.transfer_scale=1", "search.transfer_scale"},
                                 std::pair{"search.transfer_scale=100000", "search.transfer_scale"},
                                 std::pair{"search.min_distance=1.9", "search.min_distance"}}) {
    const auto bad = search({"--set", set, "--move-aside"});
    EXPECT_NE(bad.exit_code, 0) << set;
    EXPECT_NE(bad.err.find(key), std::string::npos) << set << "\n" << bad.err;
  }
}

TEST(MixSearch, TwoHundredBucketsSearchedByTopic) {
  TempDir tmp;
  std::vector<std::string> topics;
  for (int t = 0; t < 40; ++t) topics.push_back(fmt::format("t{}", t));
  const SearchFiles s = make_setup(tmp.path(), topics, 5, 4, 40, 20000,
                             "proxies = 6\nholdout = 2\ndomains = \"topic\"\nverify = false\ncandidates = 5000\n"
                             "set = [\"train.steps=4\"]\n");
  const auto r = run_process({moetrain_binary(), "mix", "search", s.search, "--out", tmp / "out", "--jobs", "2",
                              "--no-progress"},
                             600);
  ASSERT_EQ(r.exit_code, 0) << r;
  const json j = search_json(tmp / "out");
  EXPECT_EQ(j["buckets"]["names"].size(), 200u);
  EXPECT_EQ(j["domains"].size(), 40u);
  double sum = 0;
  for (const json& w : j["best"]["weights"]) sum += w.get<double>();
  EXPECT_NEAR(sum, 1.0, 1e-9);
  const auto plan = run_process({moetrain_binary(), "data", "plan", s.dataset, "--mixture", tmp / "out/best-mixture.toml",
                                 "--config", s.base});
  EXPECT_EQ(plan.exit_code, 0) << plan;
}

TEST(MixSearch, EvalTargetsAreWhatMoetrainEvalGives) {
  TempDir tmp;
  std::string task;
  for (int i = 0; i < 10; ++i)
    task += fmt::format("{{\"context\": \"w{}\", \"choices\": [\" w{}\", \" w{} w{}\"], \"answer\": {}}}\n", i,
                        (i + 1) % 10, (i + 2) % 10, (i + 3) % 10, i % 2);
  write_file(tmp / "toy.jsonl", task);
  const SearchFiles s = make_setup(tmp.path(), {"a", "b", "c"}, 1, 100, 60, 40000,
                                   "proxies = 5\nholdout = 1\nverify = false\ncandidates = 2000\ntop_k = 20\n"
                                   "[eval]\ntasks = [\"toy.jsonl\"]\n[target]\n\"acc_norm:toy\" = 1\n\"bpb:a/*\" = 1\n");
  const auto r = run_process({moetrain_binary(), "mix", "search", s.search, "--out", tmp / "out", "--jobs", "2",
                              "--no-progress"},
                             600);
  ASSERT_EQ(r.exit_code, 0) << r;
  const json j = search_json(tmp / "out");
  EXPECT_EQ(j["target"], json::parse(R"([{"name": "bpb:a/q0", "weight": 0.5}, {"name": "acc_norm:toy", "weight": 0.5}])"));
  const auto names = j["buckets"]["names"].get<std::vector<std::string>>();
  const size_t a = size_t(std::find(names.begin(), names.end(), "a/q0") - names.begin());
  ASSERT_LT(a, names.size());
  const std::string proxies = read_file(tmp / "out/proxies.jsonl");
  std::istringstream in(proxies);
  int n = 0;
  for (std::string line; std::getline(in, line); ++n) {
    const json p = json::parse(line);
    const double acc_norm = p["tasks"]["toy"]["acc_norm"].get<double>(), bpb = p["bucket_bits_per_byte"][a].get<double>();
    EXPECT_GT(bpb, 0.0);
    EXPECT_NEAR(p["target"].get<double>(), 0.5 * (1 - acc_norm) + 0.5 * bpb, 1e-12) << line;  // minimised: the error rate
    // `moetrain eval` of the proxy's checkpoint gives the same figures.
    const auto ev = run_process({moetrain_binary(), "eval", "--ckpt", tmp / ("out/" + p["name"].get<std::string>()),
                                 "--tasks", tmp / "toy.jsonl", "--out", tmp / "eval.json", "--threads", "1"});
    ASSERT_EQ(ev.exit_code, 0) << ev;
    const json e = json::parse(read_file(tmp / "eval.json"));
    EXPECT_EQ(e["tasks"][0]["acc"], p["tasks"]["toy"]["acc"]);
    EXPECT_EQ(e["tasks"][0]["acc_norm"], p["tasks"]["toy"]["acc_norm"]);
    for (const json& b : e["held_out"]["buckets"])
      if (b["bucket"] == "a/q0") {
        EXPECT_EQ(b["bits_per_byte"], p["bucket_bits_per_byte"][a]);
      }
  }
  EXPECT_EQ(n, 5);
  // Finished: a second invocation trains and scores nothing and writes the same records.
  const auto again = run_process({moetrain_binary(), "mix", "search", s.search, "--out", tmp / "out", "--no-progress"}, 600);
  ASSERT_EQ(again.exit_code, 0) << again;
  EXPECT_EQ(read_file(tmp / "out/proxies.jsonl"), proxies);
}

// A target that is no training bucket (RegMix's target domain): a held-out
// file of topic a's vocabulary, none of its documents in the dataset. The
// search moves weight to a, as it does when the target is a's own bucket;
// every proxy records what `moetrain eval --text-set` gives its checkpoint.
TEST(MixSearch, ATextSetThatIsNoBucketIsATarget) {
  TempDir tmp;
  std::string probe_dir = tmp / "probe";
  const std::string probe =
      testdata::build_labelled_dataset(probe_dir, testdata::labelled_jsonl({"a", "b", "c"}, 1, 160, 5, 70), 0.25, 320);
  // Topic index 0 is a's vocabulary; another seed gives other documents.
  write_file(tmp / "a-held.jsonl", testdata::labelled_jsonl({"a"}, 1, 30, 77, 70));
  const SearchFiles s =
      make_setup(tmp.path(), {"a", "b", "c"}, 1, 160, 70, int64_t(2 * available_tokens(probe, "a/q0")),
                 "proxies = 6\nholdout = 1\nregressor = \"loglinear\"\nmethod = \"optimum\"\n"
                 "verify = false\nbootstrap = 0\n[eval]\ntext_sets = [\"a-held.jsonl\"]\n"
                 "[target]\n\"text:a-held\" = 1\n");
  const auto r = run_process(
      {moetrain_binary(), "mix", "search", s.search, "--out", tmp / "out", "--jobs", "2", "--no-progress"}, 600);
  ASSERT_EQ(r.exit_code, 0) << r;
  const json j = search_json(tmp / "out");
  EXPECT_EQ(j["target"], json::parse(R"([{"name": "text:a-held", "weight": 1.0}])"));
  const auto names = j["buckets"]["names"].get<std::vector<std::string>>();
  const size_t a = size_t(std::find(names.begin(), names.end(), "a/q0") - names.begin());
  ASSERT_LT(a, names.size());
  EXPECT_GT(j["best"]["weights"][a].get<double>(), j["buckets"]["natural"][a].get<double>() + 0.05) << j["best"].dump();
  std::istringstream in(read_file(tmp / "out/proxies.jsonl"));
  int n = 0;
  for (std::string line; std::getline(in, line); ++n) {
    const json p = json::parse(line);
    const double bpb = p["text_sets"]["a-held"].get<double>();
    EXPECT_GT(bpb, 0.0);
    EXPECT_EQ(p["target"].get<double>(), bpb) << line;
    if (n > 0) continue;  // one checkpoint scored again by hand is enough
    const auto ev =
        run_process({moetrain_binary(), "eval", "--ckpt", tmp / ("out/" + p["name"].get<std::string>()), "--text-set",
                     tmp / "a-held.jsonl", "--no-held-out", "--out", tmp / "eval.json", "--threads", "1"});
    ASSERT_EQ(ev.exit_code, 0) << ev;
    const json e = json::parse(read_file(tmp / "eval.json"));
    ASSERT_EQ(e["text_sets"].size(), 1u);
    EXPECT_EQ(e["text_sets"][0]["set"], "a-held");
    EXPECT_EQ(e["text_sets"][0]["bits_per_byte"], p["text_sets"]["a-held"]);
    EXPECT_EQ(e["text_sets"][0]["documents"].get<int64_t>(), 30);  // labelled_jsonl: 30 of topic 0, quality 0
  }
  EXPECT_EQ(n, 6);
}

}  // namespace
}  // namespace mt::e2e
