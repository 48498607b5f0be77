// interop_tensorboard_test.cpp — a run's RUN_DIR/tensorboard/ read back by
// the tensorboard package itself (tools/interop/tensorboard_check.py in the
// interop venv): every scalar of metrics.jsonl (loss, eval losses per bucket,
// lr, grad norm, tokens/s, MFU, drops, router load, communication) at every
// step, equal to the metrics line's value as a float; and a run killed
// after a checkpoint and resumed holds each step once, in both files.
// Without the venv the test fails: it never skips (scripts/test.sh builds it).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "rundir/metrics_log.h"
#include "support/data_fixtures.h"
#include "support/e2e.h"

namespace mt::e2e {
namespace {

using nlohmann::json;

TEST(InteropTensorBoard, KilledAndResumedRunReadsBackEqualToMetrics) {
  TempDir tmp;
  const std::string ds =
      testdata::build_labelled_dataset(tmp.path(), testdata::labelled_jsonl({"a", "b"}, 2, 60, 5, 40), 0.3, 320);
  write_file(tmp / "mix.toml", "total_tokens = 8000\nscale = \"1\"\nmax_epochs = 1\nseed = 3\n[weights]\n\"*\" = 1\n");
  const std::vector<std::string> args = {"--preset",  "tiny-test",
                                         "--run-dir", tmp / "run",
                                         "--set",     "data.dataset=\"" + ds + "\"",
                                         "--set",     "data.mixture=\"" + tmp / "mix.toml" + "\"",
                                         "--set",     "train.steps=16",
                                         "--set",     "train.checkpoint_every=4",
                                         "--set",     "train.eval_every=4",
                                         "--set",     "model.vocab_size=320"};
  std::vector<std::string> first = args;
  first.insert(first.end(), {"--inject-fault", "kill:0:11"});  // SIGKILL at step 11: steps 9-10 logged, not kept
  const auto killed = train(first, 180);
  ASSERT_NE(killed.exit_code, 0) << killed;
  ASSERT_EQ(read_metrics(tmp / "run").size(), 10u) << killed;
  std::vector<std::string> again = args;
  again.push_back("--resume");
  const auto resumed = train(again, 180);
  ASSERT_EQ(resumed.exit_code, 0) << resumed;

  const std::vector<json> rows = read_metrics(tmp / "run");
  ASSERT_TRUE(has_steps_1_to_n(rows, 16));
  std::string venv_error;
  const std::string python = interop_python(venv_error);
  ASSERT_FALSE(python.empty()) << venv_error;
  const auto py = run_process(
      {python, std::string(MT_SOURCE_DIR) + "/tools/interop/tensorboard_check.py", tmp / "run/tensorboard"}, 120);
  ASSERT_EQ(py.exit_code, 0) << py;
  const json tb = json::parse(py.out);
  EXPECT_EQ(tb["file_version"], "brain.Event:2");
  EXPECT_EQ(tb["files"], json::array({"events.out.tfevents.moetrain"}));

  // What metrics.jsonl says, tag -> step -> value.
  std::map<std::string, std::map<int64_t, double>> want;
  for (const json& r : rows)
    for (const auto& [tag, v] : metric_scalars(r)) want[tag][r["step"].get<int64_t>()] = v;
  for (const char* tag : {"loss", "eval_loss", "lr", "grad_norm", "tokens_per_s", "mfu", "dropped_frac",
                          "router/layer_0/max_load", "comm/wait_s"})
    EXPECT_TRUE(want.count(tag)) << tag << " is not among the metrics' scalars";
  int64_t buckets = 0;
  for (const auto& [tag, steps] : want) buckets += tag.starts_with("bucket_eval_loss/");
  EXPECT_GE(buckets, 2) << "no per-bucket eval loss among the scalars";

  ASSERT_EQ(tb["scalars"].size(), want.size());
  for (const auto& [tag, steps] : want) {
    SCOPED_TRACE(tag);
    ASSERT_TRUE(tb["scalars"].contains(tag));
    // Every event of every file, in order: each step once (the killed run's
    // steps 9 and 10 were rewritten, not appended again).
    std::vector<int64_t> raw_steps = tb["raw"][tag].get<std::vector<int64_t>>(), want_steps;
    for (const auto& [step, v] : steps) want_steps.push_back(step);
    EXPECT_EQ(raw_steps, want_steps);
    const json& got = tb["scalars"][tag];
    ASSERT_EQ(got.size(), steps.size());
    size_t i = 0;
    for (const auto& [step, v] : steps) {
      EXPECT_EQ(got[i][0].get<int64_t>(), step);
      const double g = got[i][1].get<double>();
      EXPECT_TRUE(g == double(float(v)) || (std::isnan(g) && std::isnan(v)))
          << "step " << step << ": " << g << " vs " << v;
      ++i;
    }
  }
}

}  // namespace
}  // namespace mt::e2e
