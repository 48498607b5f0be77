// cli_reference_test.cpp — `moetrain cli-reference` through the real binary:
// docs/cli.md is its current output; options appear with the defaults the
// commands declare; and the exit codes the page documents are the ones the
// commands return, checked on cases cheap enough to run here (no training,
// no dataset build).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "support/e2e.h"

namespace mt::e2e {
namespace {

ProcessResult moetrain(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {moetrain_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, 60);
}

const std::string& reference() {
  static const std::string page = [] {
    const ProcessResult r = moetrain({"cli-reference"});
    EXPECT_EQ(r.exit_code, 0) << r;
    return r.out;
  }();
  return page;
}

// The text of the section "## `moetrain CMD`", up to the next heading.
std::string section(const std::string& page, const std::string& cmd) {
  const std::string head = "\n## `moetrain" + (cmd.empty() ? "" : " " + cmd) + "`\n";
  const size_t at = page.find(head);
  if (at == std::string::npos) return "";
  const size_t end = page.find("\n## ", at + head.size());
  return page.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// The table row of `opt` (e.g. "--run-dir", "<dir>") in a section.
std::string row(const std::string& sec, const std::string& opt) {
  const size_t at = sec.find("\n| `" + opt);
  if (at == std::string::npos) return "";
  return sec.substr(at + 1, sec.find('\n', at + 1) - at - 1);
}

std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out;
  size_t start = 1;  // after the leading '|'
  for (size_t i = 1; i < row.size(); ++i) {
    if (row[i] == '|' && row[i - 1] != '\\') {
      std::string c = row.substr(start, i - start);
      const size_t b = c.find_first_not_of(' '), e = c.find_last_not_of(' ');
      out.push_back(b == std::string::npos ? "" : c.substr(b, e - b + 1));
      start = i + 1;
    }
  }
  return out;
}

// Command -> the codes its rows in the exit-code table list.
std::map<std::string, std::set<int>> documented_exit_codes(const std::string& page) {
  std::map<std::string, std::set<int>> codes;
  const size_t at = page.find("| command | code | meaning | returned by |");
  if (at == std::string::npos) return codes;
  std::istringstream in(page.substr(at));
  std::string line, cmd;
  std::getline(in, line);
  std::getline(in, line);  // |---|
  while (std::getline(in, line) && line.rfind("|", 0) == 0) {
    const std::vector<std::string> c = cells(line);
    if (c.size() < 2) break;
    if (!c[0].empty()) cmd = c[0].substr(std::string("`moetrain ").size(), c[0].size() - 11);
    codes[cmd].insert(std::stoi(c[1]));
  }
  return codes;
}

// docs/cli.md is generated; a command or option added without regenerating
// it (moetrain cli-reference > docs/cli.md) fails here.
TEST(CliReference, DocsAreCurrent) {
  const std::string& page = reference();
  ASSERT_FALSE(page.empty());
  std::ifstream in(std::string(MT_SOURCE_DIR) + "/docs/cli.md");
  ASSERT_TRUE(in) << "docs/cli.md missing";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_TRUE(ss.str() == page) << "docs/cli.md is out of date: run `moetrain cli-reference > docs/cli.md`";
}

// `moetrain --version`: the version, the commit it was configured from and
// the ISA its kernels were built for; exit 0 without a subcommand.
TEST(CliReference, VersionNamesTheBuild) {
  const auto r = run_process({moetrain_binary(), "--version"}, 30);
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(r.out.rfind("moetrain 0.", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("(commit "), std::string::npos) << r.out;
  EXPECT_TRUE(r.out.find("AVX-512 kernels") != std::string::npos || r.out.find("AVX2+FMA kernels") != std::string::npos)
      << r.out;
}

TEST(CliReference, ShowsOptionsWithTheirDefaults) {
  const std::string& page = reference();
  struct Expect {
    std::string cmd, opt, value, def, required;
  };
  const Expect kRows[] = {
      {"train", "--run-dir", "`TEXT`", "`runs/quickstart`", ""},
      {"train", "--resume", "flag", "", ""},
      {"bench", "--preset", "`TEXT`", "`bench/moe-512`", ""},
      {"bench", "--precision", "`TEXT`, one of `fp32`, `bf16`", "`fp32`", ""},
      {"bench", "--steps", "`INT`, in [1, 100000]", "`4`", ""},
      {"ckpt inspect", "<dir>", "`TEXT`", "", "yes"},
      {"data build", "--config", "`TEXT`", "", "yes"},
      {"data plan", "--mixture", "`TEXT`", "", ""},  // a --config may name it
      {"plan", "--model", "`TEXT`", "", "yes"},
      {"plan", "--search", "`TEXT`, one of `auto`, `layers`, `experts`, `none`", "`auto`", ""},
      {"ladder fit", "--level", "`FLOAT`, in [0.5, 0.999]", "`0.95`", ""},
      {"tokenizer train", "--vocab-size", "`INT`, in [1, 4194304]", "`8000`", ""},
  };
  for (const Expect& e : kRows) {
    const std::string sec = section(page, e.cmd);
    ASSERT_FALSE(sec.empty()) << "no section for moetrain " << e.cmd;
    const std::string r = row(sec, e.opt);
    ASSERT_FALSE(r.empty()) << "moetrain " << e.cmd << ": no row for " << e.opt;
    const std::vector<std::string> c = cells(r);
    ASSERT_EQ(c.size(), 5u) << r;
    EXPECT_EQ(c[1], e.value) << r;
    EXPECT_EQ(c[2], e.def) << r;
    EXPECT_EQ(c[3], e.required) << r;
  }
  // needs/excludes come from CLI11 too, and every leaf is listed under its parent.
  EXPECT_NE(row(section(page, "ladder fit"), "--target-params").find("Needs `--target-tokens`"), std::string::npos);
  EXPECT_NE(row(section(page, "tokenizer encode"), "--text").find("Excludes `--file`"), std::string::npos);
  EXPECT_NE(section(page, "data").find("- [`moetrain data plan`](#moetrain-data-plan)"), std::string::npos);
  EXPECT_EQ(row(section(page, "train"), "-h"), "") << "--help is described once, not per command";
}

// Runs each case and checks both the code and that the page lists it for
// that command (or, above 100, in CLI11's table).
TEST(CliReference, DocumentedExitCodesAreReturned) {
  const std::string& page = reference();
  const auto documented = documented_exit_codes(page);
  ASSERT_FALSE(documented.empty()) << "no exit-code table";
  const std::string missing = "/nonexistent/moetrain-cli-reference-test";
  struct Case {
    std::string cmd;  // the row of the exit-code table ("" for CLI11's)
    std::vector<std::string> args;
    int code;
  };
  const std::vector<Case> kCases = {
      {"", {}, 106},                                // no command: RequiredError
      {"", {"ckpt"}, 106},                          // no subcommand
      {"", {"data", "build", "--out", "d"}, 106},   // no --config
      {"", {"bench", "--threads", "x"}, 104},       // ConversionError
      {"", {"bench", "--precision", "fp16"}, 105},  // ValidationError
      {"", {"bench", "--steps", "0"}, 105},
      {"", {"ladder", "fit", "r.csv", "--target-params", "1e9"}, 107},                   // RequiresError
      {"", {"tokenizer", "encode", "--model", "m", "--text", "a", "--file", "f"}, 108},  // ExcludesError
      {"", {"train", "--nope"}, 109},                                                    // ExtrasError
      {"train", {"train", "--help"}, 0},
      {"train", {"train", "--preset", "nope"}, 2},
      {"train", {"train", "--config", missing}, 2},
      {"train", {"train", "--inject-fault", "explode"}, 2},
      {"bench", {"bench", "--preset", "nope"}, 2},
      {"doctor", {"doctor", "--inject-fault", "wronggemm"}, 2},
      {"doctor", {"doctor", "--memory-mib", "8", "--inject-fault", "wronggemm:0"}, 1},
      {"ckpt inspect", {"ckpt", "inspect", missing}, 1},
      {"ckpt branch", {"ckpt", "branch", missing, missing + "-branch"}, 1},
      {"report", {"report", missing}, 1},
      {"data build", {"data", "build", "--config", missing, "--out", missing}, 2},
      {"data inspect", {"data", "inspect", missing}, 1},
      {"data plan", {"data", "plan", missing, "--mixture", missing}, 1},
      {"data plan", {"data", "plan", missing, "--mixture", missing, "--config", missing}, 2},
      {"data show", {"data", "show", missing, "0"}, 1},
      {"data decontaminate", {"data", "decontaminate", missing, "--tasks", missing, "--dry-run"}, 2},
      {"tokenizer train", {"tokenizer", "train", "--input", missing, "--out", missing}, 1},
      {"tokenizer encode", {"tokenizer", "encode", "--model", missing, "--text", "a"}, 1},
      {"plan", {"plan", "--model", "x", "--cluster", "y", "--layout", "z", "--tokens", "many"}, 2},
      {"config reference", {"config", "reference"}, 0},
      {"config show", {"config", "show", "nokind", missing}, 2},
      {"config show", {"config", "show", "run", missing}, 2},
      {"ladder fit", {"ladder", "fit", missing}, 2},
      {"ladder run", {"ladder", "run", missing}, 2},
      {"mix search", {"mix", "search", missing}, 2},
      {"sweep", {"sweep", missing}, 2},
      {"arch compare", {"arch", "compare", missing}, 2},
      {"arch report", {"arch", "report", missing}, 2},
      {"supervise", {"supervise", "--hosts", missing, "--run-dir", missing, "--", "--resume"}, 2},
      {"generate", {"generate", "--ckpt", missing, "--prompt", "a"}, 1},
      {"generate", {"generate", "--ckpt", missing}, 2},
      {"eval", {"eval", "--ckpt", missing}, 1},
      {"eval", {"eval", "--ckpt", missing, "--tasks", missing}, 2},
      {"tasks make passkey",
       {"tasks", "make", "passkey", "--split", "held-out", "--tokens", "256", "--filler", missing, "--tokenizer",
        "bytes", "--out", missing},
       2},
      {"tasks make passkey",
       {"tasks", "make", "passkey", "--split", "held-out", "--tokens", "256", "--filler", MT_SOURCE_DIR "/README.md",
        "--tokenizer", "bytes", "--out", missing + "/t.jsonl"},
       1},
      {"tasks make add",
       {"tasks", "make", "add", "--split", "held-out", "--digits", "1", "--n", "60", "--out", missing},
       2},
      {"tasks make sort", {"tasks", "make", "sort", "--split", "train", "--n", "2", "--out", missing + "/t.jsonl"}, 1},
      {"export", {"export", "--ckpt", missing, "--out", missing}, 1},
      {"export", {"export", "--ckpt", missing, "--out", missing, "--format", "onnx"}, 2},
      {"import", {"import", "--hf", missing, "--out", missing}, 1},
      {"cli-reference", {"cli-reference"}, 0},
  };
  for (const Case& c : kCases) {
    const ProcessResult r = moetrain(c.args);
    EXPECT_EQ(r.exit_code, c.code) << r;
    if (c.cmd.empty()) {
      EXPECT_NE(page.find("\n| " + std::to_string(c.code) + " | `"), std::string::npos)
          << "CLI11's code " << c.code << " is not in the page";
    } else {
      ASSERT_TRUE(documented.count(c.cmd)) << "no exit codes documented for moetrain " << c.cmd;
      EXPECT_TRUE(documented.at(c.cmd).count(c.code))
          << "moetrain " << c.cmd << " returned " << c.code << ", which the page does not list";
    }
  }
  // Every leaf command has its row; data plan's 3 is run in DataPipeline.PlanPassesOrFailsNamingBuckets,
  // export's 3 in InteropHf.ExportRefusesNamingTheFeature, data decontaminate's 1 in
  // DecontaminateCli.BadInputNamesTheFileOrFlagAndLeavesNothing.
  EXPECT_EQ(documented.size(), 42u);  // 27 + the ten task families + sft, rl, distill + arch compare, arch report
  EXPECT_TRUE(documented.at("data plan").count(3));
}

}  // namespace
}  // namespace mt::e2e
