// numeric_flags_sweep_test.cpp — every numeric flag of every command (issue
// 44: "no MT_CHECK abort is reachable from input") through boundary and
// absurd values: -1, 0, 10^9, 1e300, nan and a number past int64. Each
// invocation must end on its own with an exit code (never a signal: no
// abort, no crash, no OOM kill), within the time limit, and a refusal names
// the flag; the children's peak memory stays bounded. The table below is
// checked against `moetrain cli-reference`, so a new numeric flag without a
// sweep entry fails here.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <map>
#include <set>
#include <sstream>

#include "support/data_fixtures.h"
#include "support/e2e.h"

namespace mt::e2e {
namespace {

struct Sweep {
  std::string command;            // as cli-reference names it ("ladder fit")
  std::string flag;               // "--bootstrap"
  std::vector<std::string> args;  // a cheap invocation the flag is added to
};

// Every numeric flag in the CLI reference, as "command :: --flag".
std::set<std::string> numeric_flags_in_reference() {
  const auto r = run_process({moetrain_binary(), "cli-reference"});
  EXPECT_EQ(r.exit_code, 0) << r;
  std::set<std::string> out;
  std::istringstream in(r.out);
  std::string line, command;
  while (std::getline(in, line)) {
    if (line.rfind("## `moetrain ", 0) == 0) command = line.substr(13, line.rfind('`') - 13);
    if (line.rfind("| `--", 0) != 0) continue;
    const size_t a = line.find('`') + 1, b = line.find('`', a);
    const std::string flag = line.substr(a, b - a);
    const size_t cell = line.find('|', b);
    const std::string value = line.substr(cell, line.find('|', cell + 1) - cell);
    if (value.find("`INT`") != std::string::npos || value.find("`FLOAT`") != std::string::npos ||
        value.find("`UINT`") != std::string::npos)
      out.insert(command + " :: " + flag);
  }
  return out;
}

TEST(NumericFlagsSweep, EveryNumericFlagEndsCleanlyOnAbsurdValues) {
  TempDir tmp;
  // What the commands read: a two-step run, its export, a small dataset, a
  // ladder results file, a task file, a text file.
  const std::string run = tmp / "run";
  ASSERT_EQ(train({"--preset", "tiny-test", "--run-dir", run, "--set", "train.steps=2"}).exit_code, 0);
  ASSERT_EQ(run_process({moetrain_binary(), "export", "--ckpt", run, "--format", "safetensors", "--out", tmp / "raw"})
                .exit_code,
            0);
  const std::string ds =
      testdata::build_labelled_dataset(tmp / "data", testdata::labelled_jsonl({"a", "b"}, 1, 20, 3, 30), 0.3, 320);
  write_file(tmp / "mix.toml", "total_tokens = 4000\nscale = \"1\"\nmax_epochs = 1\nseed = 3\n[weights]\n\"*\" = 1\n");
  std::string results;
  for (int i = 0; i < 6; ++i)
    results += "{\"name\": \"r" + std::to_string(i) + "\", \"params\": " + std::to_string(1e6 * (1 << i)) +
               ", \"tokens\": " + std::to_string(2e7 * (1 << i)) + ", \"loss\": " + std::to_string(4.0 - 0.3 * i) +
               "}\n";
  write_file(tmp / "results.jsonl", results);
  write_file(tmp / "tasks.jsonl", "{\"context\": \"a\", \"choices\": [\" b\", \" c\"], \"answer\": 0}\n");
  std::string text;
  for (int i = 0; i < 200; ++i) text += "the quick brown fox jumps over the lazy dog " + std::to_string(i) + "\n";
  write_file(tmp / "text.txt", text);
  std::string prose;  // passkey filler: sentences that end in a full stop
  for (int i = 0; i < 100; ++i) prose += "The quick brown fox jumps over the lazy dog number " + std::to_string(i) + ". ";
  write_file(tmp / "prose.txt", prose);

  const std::vector<std::string> gen = {"generate", "--ckpt", run, "--prompt", "a", "--no-progress"};
  const std::vector<std::string> passkey = {"tasks", "make", "passkey", "--split", "held-out", "--n", "5",
                                            "--tokens", "200", "--filler", tmp / "prose.txt", "--tokenizer", "bytes",
                                            "--out", tmp / "pk.jsonl"};
  const auto family = [&](const std::string& f) {
    return std::vector<std::string>{"tasks", "make", f, "--split", "train", "--n", "3", "--out", tmp / "f.jsonl"};
  };
  const std::vector<Sweep> sweeps = {
      {"train",
       "--stop-at",
       {"train", "--preset", "tiny-test", "--set", "train.steps=3", "--no-progress", "--run-dir", ""}},
      {"bench", "--steps", {"bench", "--preset", "tiny", "--json"}},
      {"bench", "--threads", {"bench", "--preset", "tiny", "--json", "--steps", "1"}},
      {"doctor", "--bandwidth-bytes", {"doctor", "--timeout", "5"}},
      {"doctor", "--memory-mib", {"doctor", "--timeout", "5"}},
      {"doctor", "--timeout", {"doctor"}},
      // A cluster file in no directory: a value that passes the flag's checks is refused before measuring.
      {"doctor", "--measure-tokens", {"doctor", "--write-cluster", tmp / "missing/c.toml"}},
      {"doctor", "--threads", {"doctor", "--write-cluster", tmp / "missing/c.toml", "--measure-tokens", "512"}},
      {"data build", "--timeout", {"data", "build", "--config", tmp / "missing.toml", "--out", tmp / "db"}},
      {"data inspect", "--limit", {"data", "inspect", ds, "--docs"}},
      {"data plan", "--seq-len", {"data", "plan", ds, "--mixture", tmp / "mix.toml"}},
      {"data decontaminate", "--n", {"data", "decontaminate", ds, "--tasks", tmp / "tasks.jsonl", "--dry-run"}},
      {"data decontaminate", "--threshold", {"data", "decontaminate", ds, "--tasks", tmp / "tasks.jsonl", "--dry-run"}},
      {"data decontaminate", "--threads", {"data", "decontaminate", ds, "--tasks", tmp / "tasks.jsonl", "--dry-run"}},
      {"tokenizer train", "--vocab-size", {"tokenizer", "train", "--input", tmp / "text.txt", "--out", tmp / "tok"}},
      {"tokenizer train",
       "--sample-bytes",
       {"tokenizer", "train", "--input", tmp / "text.txt", "--out", tmp / "tok", "--vocab-size", "320"}},
      {"plan",
       "--seed",
       {"plan", "--model", std::string(MT_SOURCE_DIR) + "/configs/quickstart.toml", "--cluster", "cpu", "--layout",
        "cpu", "--tokens", "1e9", "--no-sweep"}},
      {"ladder fit", "--huber-delta", {"ladder", "fit", tmp / "results.jsonl", "--bootstrap", "0"}},
      {"ladder fit", "--bootstrap", {"ladder", "fit", tmp / "results.jsonl"}},
      {"ladder fit", "--seed", {"ladder", "fit", tmp / "results.jsonl", "--bootstrap", "2"}},
      {"ladder fit", "--level", {"ladder", "fit", tmp / "results.jsonl", "--bootstrap", "2"}},
      {"ladder fit", "--drop-highest-loss", {"ladder", "fit", tmp / "results.jsonl", "--bootstrap", "0"}},
      {"ladder fit",
       "--target-params",
       {"ladder", "fit", tmp / "results.jsonl", "--bootstrap", "0", "--target-tokens", "1e12"}},
      {"ladder fit",
       "--target-tokens",
       {"ladder", "fit", tmp / "results.jsonl", "--bootstrap", "0", "--target-params", "1e9"}},
      {"ladder fit", "--target-flops", {"ladder", "fit", tmp / "results.jsonl", "--bootstrap", "0"}},
      {"ladder fit",
       "--tokens-per-param",
       {"ladder", "fit", tmp / "results.jsonl", "--bootstrap", "0", "--target-flops", "1e21"}},
      {"ladder fit", "--target-sparsity", {"ladder", "fit", tmp / "results.jsonl", "--bootstrap", "0"}},
      {"ladder run", "--jobs", {"ladder", "run", tmp / "missing.toml", "--out", tmp / "lr"}},
      {"mix search", "--jobs", {"mix", "search", tmp / "missing.toml", "--out", tmp / "ms"}},
      {"sweep", "--jobs", {"sweep", tmp / "missing.toml", "--out", tmp / "sw"}},
      {"arch compare", "--jobs", {"arch", "compare", tmp / "missing.toml", "--out", tmp / "ac"}},
      {"supervise", "--spares", {"supervise", "--hosts", tmp / "missing-hosts", "--run-dir", tmp / "sv"}},
      {"supervise", "--min-ranks", {"supervise", "--hosts", tmp / "missing-hosts", "--run-dir", tmp / "sv"}},
      {"supervise", "--heartbeat-timeout", {"supervise", "--hosts", tmp / "missing-hosts", "--run-dir", tmp / "sv"}},
      {"supervise", "--startup-timeout", {"supervise", "--hosts", tmp / "missing-hosts", "--run-dir", tmp / "sv"}},
      {"supervise", "--recovery", {"supervise", "--hosts", tmp / "missing-hosts", "--run-dir", tmp / "sv"}},
      {"supervise", "--quarantine-window", {"supervise", "--hosts", tmp / "missing-hosts", "--run-dir", tmp / "sv"}},
      {"supervise", "--wait-for-hosts", {"supervise", "--hosts", tmp / "missing-hosts", "--run-dir", tmp / "sv"}},
      {"supervise", "--max-restarts", {"supervise", "--hosts", tmp / "missing-hosts", "--run-dir", tmp / "sv"}},
      {"generate", "--max-new-tokens", gen},
      {"generate", "--temperature", gen},
      {"generate", "--top-k", gen},
      {"generate", "--top-p", gen},
      {"generate", "--seed", gen},
      {"generate", "--max-rows", gen},
      {"generate", "--threads", gen},
      {"eval", "--batches", {"eval", "--ckpt", run, "--no-progress", "--dataset", ds, "--mixture", tmp / "mix.toml"}},
      {"eval", "--seq-len", {"eval", "--ckpt", run, "--no-progress", "--dataset", ds, "--mixture", tmp / "mix.toml"}},
      {"eval",
       "--context-min",
       {"eval", "--ckpt", run, "--no-progress", "--dataset", ds, "--mixture", tmp / "mix.toml", "--positions"}},
      {"eval", "--batch", {"eval", "--ckpt", run, "--no-progress", "--tasks", tmp / "tasks.jsonl", "--no-held-out"}},
      {"eval", "--threads", {"eval", "--ckpt", run, "--no-progress", "--tasks", tmp / "tasks.jsonl", "--no-held-out"}},
      {"eval",
       "--episode-tokens",
       {"eval", "--ckpt", run, "--no-progress", "--tasks", tmp / "tasks.jsonl", "--no-held-out"}},
      {"export",
       "--max-shard-mb",
       {"export", "--ckpt", run, "--format", "safetensors", "--move-aside", "--out", tmp / "ex"}},
      {"import", "--step", {"import", "--hf", tmp / "raw", "--move-aside", "--out", tmp / "im"}},
      {"tasks make passkey", "--n", passkey},
      {"tasks make passkey", "--seed", passkey},
      {"tasks make passkey", "--tokens", passkey},
      {"tasks make passkey", "--depths", passkey},
      {"tasks make passkey", "--digits", passkey},
      {"tasks make passkey", "--repeat", passkey},
      {"tasks make passkey", "--filler-mb", passkey},
      {"sft",
       "--epochs",
       {"sft", "--init", tmp / "missing", "--data", tmp / "missing.jsonl", "--run-dir", tmp / "sft"}},
      {"tasks make add", "--n", family("add")},
      {"tasks make add", "--seed", family("add")},
      {"tasks make add", "--per-document", family("add")},
      {"tasks make add", "--digits", family("add")},
      {"tasks make mul", "--n", family("mul")},
      {"tasks make mul", "--seed", family("mul")},
      {"tasks make mul", "--per-document", family("mul")},
      {"tasks make mul", "--digits", family("mul")},
      {"tasks make lineq", "--n", family("lineq")},
      {"tasks make lineq", "--seed", family("lineq")},
      {"tasks make lineq", "--per-document", family("lineq")},
      {"tasks make lineq", "--digits", family("lineq")},
      {"tasks make multistep", "--n", family("multistep")},
      {"tasks make multistep", "--seed", family("multistep")},
      {"tasks make multistep", "--per-document", family("multistep")},
      {"tasks make multistep", "--digits", family("multistep")},
      {"tasks make multistep", "--steps", family("multistep")},
      {"tasks make sort", "--n", family("sort")},
      {"tasks make sort", "--seed", family("sort")},
      {"tasks make sort", "--per-document", family("sort")},
      {"tasks make sort", "--length", family("sort")},
      {"tasks make reverse", "--n", family("reverse")},
      {"tasks make reverse", "--seed", family("reverse")},
      {"tasks make reverse", "--per-document", family("reverse")},
      {"tasks make reverse", "--length", family("reverse")},
      {"tasks make strings", "--n", family("strings")},
      {"tasks make strings", "--seed", family("strings")},
      {"tasks make strings", "--per-document", family("strings")},
      {"tasks make strings", "--length", family("strings")},
      {"tasks make copy", "--n", family("copy")},
      {"tasks make copy", "--seed", family("copy")},
      {"tasks make copy", "--per-document", family("copy")},
      {"tasks make copy", "--length", family("copy")},
      {"tasks make calc", "--n", family("calc")},
      {"tasks make calc", "--seed", family("calc")},
      {"tasks make calc", "--per-document", family("calc")},
      {"tasks make calc", "--digits", family("calc")},
      {"tasks make calc", "--tool-share", family("calc")},
      {"tasks make kv", "--n", family("kv")},
      {"tasks make kv", "--seed", family("kv")},
      {"tasks make kv", "--per-document", family("kv")},
      {"tasks make kv", "--digits", family("kv")},
      {"tasks make kv", "--tool-share", family("kv")},
  };
  std::set<std::string> covered;
  for (const Sweep& s : sweeps) covered.insert(s.command + " :: " + s.flag);
  for (const std::string& f : numeric_flags_in_reference())
    EXPECT_TRUE(covered.count(f)) << f << ": a numeric flag the sweep does not cover";

  const std::vector<std::string> values = {"-1", "0", "1000000000", "1e300", "nan", "99999999999999999999"};
  for (const Sweep& s : sweeps)
    for (const std::string& v : values) {
      std::vector<std::string> argv = {moetrain_binary()};
      argv.insert(argv.end(), s.args.begin(), s.args.end());
      argv.insert(argv.end(), {s.flag, v});
      const auto r = run_process(argv, 60, kPassiveOmp);
      SCOPED_TRACE(r.command);
      EXPECT_FALSE(r.timed_out) << r;
      EXPECT_EQ(r.term_signal, 0) << "ended by a signal: " << r;
      // A refusal names the flag (or, for the commands whose base input is
      // missing on purpose, the input it lacks, after the flag was accepted).
      if (r.exit_code != 0 && r.err.find(s.flag) == std::string::npos) {
        EXPECT_TRUE(r.err.find("missing") != std::string::npos || r.err.find("cannot") != std::string::npos ||
                    r.err.find("No such file") != std::string::npos)
            << "refused without naming " << s.flag << ": " << r;
      }
    }
  // Bounded memory: the largest child of all.
  rusage ru{};
  getrusage(RUSAGE_CHILDREN, &ru);
  EXPECT_LT(double(ru.ru_maxrss) * 1024.0, 4.0 * double(1 << 30)) << "a child's peak resident memory";
  // A refused supervise leaves no run directory (issue 44, item 10).
  EXPECT_FALSE(fs::exists(tmp / "sv")) << "a refused supervise left its run directory";
}

}  // namespace
}  // namespace mt::e2e
