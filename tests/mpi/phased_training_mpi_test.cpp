// phased_training_mpi_test.cpp — a run in phases under `mpirun -np 2` with
// expert parallelism against the one-process run: a batch ramp, a phase of
// longer sequences (the EP buffers are sized anew) and an annealing phase on
// its own mixture, with capacity drops. Per step the losses agree within
// 1e-5 relative (layouts differ only in summation order; see
// distributed_training_test.cpp), and the routing decisions are the same:
// expert loads, and the capacity drops charged to each data bucket — summed
// over the ranks, whose sequences they are — equal the one-process run's.
#include <gtest/gtest.h>

#include <cmath>

#include "support/data_fixtures.h"
#include "support/e2e.h"
#include "support/mpi.h"

namespace mt::e2e {
namespace {

namespace td = testdata;

TEST(PhasedMpi, ExpertParallelRunMatchesOneProcessPhaseByPhase) {
  TempDir tmp;
  const std::string d = tmp.path();
  td::write_file(d + "/corpus.jsonl", td::labelled_jsonl({"web", "code"}, 2, 40, 5, 60));
  td::write_file(d + "/data.toml", "[[input]]\npath = \"" + d +
                                       "/corpus.jsonl\"\n[tokenizer]\nvocab_size = 480\n"
                                       "[split]\neval_frac = 0.1\n");
  const ProcessResult b = run_process(
      {moetrain_binary(), "data", "build", "--config", d + "/data.toml", "--out", d + "/ds", "--quiet"}, 120);
  ASSERT_EQ(b.exit_code, 0) << b;
  td::write_file(d + "/main.toml", "total_tokens = 4096\n");  // per segment: the ramp's, then the long one's
  td::write_file(d + "/anneal.toml", "total_tokens = 4096\n[quality_weights]\nq0 = 1.0\nq1 = 4.0\n");
  td::write_file(d + "/run.toml", tiny_moe_model_toml() + R"([train]
batch_size = 4
seq_len = 32
threads = 1
[data]
dataset = ")" + d + R"(/ds"
mixture = ")" + d + R"(/main.toml"
[[phase]]
name = "ramp"
steps = 4
ramp_from = 4
global_batch = 8
[[phase]]
name = "long"
steps = 4
global_batch = 8
seq_len = 64
rope_theta = 20000.0
[[phase]]
name = "anneal"
steps = 3
global_batch = 4
seq_len = 64
mixture = ")" + d + R"(/anneal.toml"
lr = "decay"
)");
  const ProcessResult one = train({"--config", d + "/run.toml", "--run-dir", d + "/one"});
  ASSERT_EQ(one.exit_code, 0) << one;
  const ProcessResult two = mpi_train(2, {"--config", d + "/run.toml", "--run-dir", d + "/two", "--set", "dist.ep=2"});
  ASSERT_EQ(two.exit_code, 0) << two;
  const auto a = read_metrics(d + "/one"), m = read_metrics(d + "/two");
  ASSERT_EQ(a.size(), 11u);
  ASSERT_EQ(m.size(), 11u) << two;
  int64_t dropped = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i + 1));
    EXPECT_EQ(m[i]["phase"], a[i]["phase"]);
    EXPECT_EQ(m[i]["tokens"], a[i]["tokens"]);
    const double la = a[i]["loss"].get<double>(), lb = m[i]["loss"].get<double>();
    EXPECT_LE(std::fabs(la - lb), 1e-5 * std::fabs(la));
    EXPECT_EQ(m[i]["expert_load"], a[i]["expert_load"]);
    EXPECT_EQ(m[i]["bucket_dropped"], a[i]["bucket_dropped"]);
    EXPECT_EQ(m[i]["dropped"], a[i]["dropped"]);
    dropped += a[i]["dropped"].get<int64_t>();
  }
  EXPECT_GT(dropped, 0) << "no capacity drop to attribute";
}

}  // namespace
}  // namespace mt::e2e
