// train_phased_data_test.cpp — the data of a run in phases: every segment's
// mixture is planned against one pool (a later segment starts each bucket
// where the full-scale run's earlier segments stop), and a proxy run at
// scale 1/N reads, segment by segment, a prefix of what the full run reads.
#include <gtest/gtest.h>

#include <vector>

#include "data/dataset.h"
#include "support/data_fixtures.h"
#include "train/phased_data.h"
#include "train/run_config.h"

namespace mt {
namespace {

namespace td = testdata;

class PhasedDataTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new td::TempDir();
    ds_ = new std::string(td::build_labelled_dataset(dir_->path(), td::labelled_jsonl({"web", "code"}, 2, 30, 3, 60)));
  }
  static void TearDownTestSuite() {
    delete ds_;
    delete dir_;
  }
  // A two-segment run (main, then an anneal on its own mixture) at `scale`, its phases `steps` long.
  static RunConfig config(const std::string& scale, int64_t main_steps, int64_t anneal_steps) {
    const std::string d = dir_->path();
    td::write_file(d + "/main" + scale.substr(2) + ".toml", "total_tokens = 12800\nscale = \"" + scale + "\"\n");
    td::write_file(d + "/anneal" + scale.substr(2) + ".toml",
                   "total_tokens = 3200\nscale = \"" + scale + "\"\n[quality_weights]\nq0 = 1.0\nq1 = 3.0\n");
    auto c = parse_run_config(
        "[model]\nvocab_size = 512\nd_model = 32\nn_layers = 1\nn_heads = 2\nn_kv_heads = 1\n[train]\nbatch_size = 2\n"
        "seq_len = 32\n[data]\ndataset = \"" +
            *ds_ + "\"\nmixture = \"" + d + "/main" + scale.substr(2) + ".toml\"\n[[phase]]\nsteps = " +
            std::to_string(main_steps) + "\n[[phase]]\nsteps = " + std::to_string(anneal_steps) + "\nmixture = \"" + d +
            "/anneal" + scale.substr(2) + ".toml\"\n",
        "run.toml", {});
    EXPECT_TRUE(c.is_ok()) << c.status().message();
    return *c;
  }
  static std::unique_ptr<PhasedData> open(const RunConfig& c) {
    auto s = PhaseSchedule::make(c);
    EXPECT_TRUE(s.is_ok()) << s.status().message();
    auto d = PhasedData::open(c, *s);
    EXPECT_TRUE(d.is_ok()) << d.status().message();
    return d.is_ok() ? std::move(*d) : nullptr;
  }
  static td::TempDir* dir_;
  static std::string* ds_;
};
td::TempDir* PhasedDataTest::dir_ = nullptr;
std::string* PhasedDataTest::ds_ = nullptr;

std::vector<int32_t> seq(const TokenSource& s, int64_t i) {
  std::vector<int32_t> out(33);
  s.sequence(i, 32, out.data());
  return out;
}

TEST_F(PhasedDataTest, AProxyReadsEverySegmentsPrefixOfTheFullRun) {
  // Full: 12800 / 32 = 400 main sequences (200 steps of 2), 100 anneal ones.
  const auto full = open(config("1/1", 200, 50));
  const auto half = open(config("1/2", 100, 25));
  ASSERT_TRUE(full && half);
  // Segment 1 of the proxy starts where the full run's (twice as long) main
  // segment ends, not where its own does: so its sequences are the full run's.
  for (size_t seg = 0; seg < 2; ++seg)
    for (int64_t i = 0; i < (seg == 0 ? 200 : 50); ++i)
      ASSERT_EQ(seq(half->source(seg), i), seq(full->source(seg), i)) << "segment " << seg << " sequence " << i;
}

TEST_F(PhasedDataTest, EachSegmentStartsAfterWhatTheEarlierOnesTake) {
  const RunConfig c = config("1/1", 200, 50);
  auto s = PhaseSchedule::make(c);
  ASSERT_TRUE(s.is_ok());
  auto ds = Dataset::open(*ds_);
  ASSERT_TRUE(ds.is_ok());
  auto plans = plan_segments(**ds, *s);
  ASSERT_TRUE(plans.is_ok()) << plans.status().message();
  ASSERT_EQ(plans->size(), 2u);
  const MixturePlan& main = (*plans)[0].plan;
  for (const BucketPlan& b : (*plans)[1].plan.buckets) {
    int64_t taken = 0;
    for (const BucketPlan& m : main.buckets)
      if (m.bucket == b.bucket) taken = m.full_sequences * 32;
    EXPECT_EQ(b.tokens_before, taken) << b.name;
  }
  // The ledger over the run is the sum of the segments' ledgers.
  const auto data = open(c);
  const auto whole = data->ledger(250), first = data->phase_ledger(0), second = data->phase_ledger(1);
  int64_t sum = 0, parts = 0;
  for (const auto& [name, t] : whole) sum += t;
  for (const auto& [name, t] : first) parts += t;
  for (const auto& [name, t] : second) parts += t;
  EXPECT_EQ(sum, 250 * 2 * 32);
  EXPECT_EQ(parts, sum);
}

}  // namespace
}  // namespace mt
