// data_sampler_test.cpp — the mixture sampler on synthetic bucketed datasets:
// realised mixtures within one sequence of the plan at every prefix (9 and
// 200 buckets), the proportional-subset property at several scales, content
// (each sequence is the right window of its bucket's permuted document
// stream, nothing read twice within an epoch; multi-token prediction's extra
// targets are the stream's next tokens, read ahead without being consumed),
// determinism across instances
// and access orders (what resume relies on), refusal of multi-epoch plans,
// the budget check and per-bucket eval sequences.
#include "data/sampler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "support/data_fixtures.h"

namespace mt {
namespace {

using ::testing::HasSubstr;
namespace td = testdata;

// One dataset for the whole suite: 3 topics x 3 quality levels.
class SamplerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new td::TempDir();
    const std::string path =
        td::build_labelled_dataset(dir_->path(), td::labelled_jsonl({"web", "code", "math"}, 3, 24, 7, 60), 0.25);
    auto ds = Dataset::open(path);
    ASSERT_TRUE(ds.is_ok()) << ds.status().message();
    ds_ = std::shared_ptr<const Dataset>(std::move(ds.value()));
  }
  static void TearDownTestSuite() {
    ds_.reset();
    delete dir_;
  }
  static Mixture mixture(const std::string& text) {
    auto m = parse_mixture(text, "mix.toml");
    EXPECT_TRUE(m.is_ok()) << m.status().message();
    return m.value();
  }
  static std::unique_ptr<MixtureSampler> open(const std::string& text, int64_t seq_len, int64_t max_seq = 0) {
    auto s = MixtureSampler::open(ds_, mixture(text), seq_len, max_seq);
    EXPECT_TRUE(s.is_ok()) << s.status().message();
    return s.is_ok() ? std::move(s.value()) : nullptr;
  }
  static int64_t total_train_tokens() {
    int64_t n = 0;
    for (const Bucket& b : ds_->buckets()) n += b.train->n_tokens() + b.train->n_docs();
    return n;
  }
  static td::TempDir* dir_;
  static std::shared_ptr<const Dataset> ds_;
};
td::TempDir* SamplerTest::dir_ = nullptr;
std::shared_ptr<const Dataset> SamplerTest::ds_;

// |count_b(n) - n * Q_b / N| < 1 for every prefix n and bucket b.
void expect_within_one(const MixtureSampler& s) {
  const MixturePlan& p = s.plan();
  std::vector<int64_t> count(p.buckets.size(), 0);
  double worst = 0;
  for (int64_t n = 1; n <= p.sequences; ++n) {
    ++count[size_t(s.slot(n - 1).bucket)];
    for (size_t b = 0; b < p.buckets.size(); ++b) {
      const double ideal = double(n) * double(p.buckets[b].full_sequences) / double(p.full_sequences);
      worst = std::max(worst, std::abs(double(count[b]) - ideal));
    }
  }
  EXPECT_LT(worst, 1.0) << "a bucket strayed " << worst << " sequences from its share";
}

TEST_F(SamplerTest, DatasetHasNineBuckets) {
  ASSERT_EQ(ds_->buckets().size(), 9u);
  EXPECT_EQ(ds_->buckets()[0].name, "code/q0");
  for (const Bucket& b : ds_->buckets()) {
    EXPECT_GT(b.train->n_tokens(), 1000) << b.name;
    EXPECT_GT(b.eval->n_docs(), 0) << b.name;
  }
}

TEST_F(SamplerTest, RealisedMixtureWithinOneSequenceAtEveryPrefix) {
  const int64_t T = 16;
  for (const char* weights : {"\"web/*\" = 0.5\n\"code/*\" = 0.3\n\"math/*\" = 0.2\n",
                              "\"web/q0\" = 1\n\"code/q2\" = 7\n\"math/q1\" = 0.013\n\"web/q2\" = 3.3\n",
                              "\"*\" = 1\n"}) {
    SCOPED_TRACE(weights);
    auto s = open(fmt::format("total_tokens = {}\n[weights]\n{}", total_train_tokens() / 8, weights), T);
    ASSERT_TRUE(s);
    ASSERT_GT(s->plan().sequences, 100);
    expect_within_one(*s);
    // The realised share matches the requested weight to within one sequence of the run.
    for (const BucketPlan& b : s->plan().buckets)
      EXPECT_NEAR(double(b.full_sequences), b.weight * double(s->plan().full_sequences), 1.0) << b.name;
  }
}

TEST_F(SamplerTest, FactorisedTopicQualityWeights) {
  auto s = open(fmt::format("total_tokens = {}\n[topic_weights]\nweb = 2\ncode = 1\n[quality_weights]\nq2 = 3\nq1 = "
                            "1\n",
                            total_train_tokens() / 6),
                16);
  ASSERT_TRUE(s);
  double web = 0, code = 0, q2 = 0, q1 = 0;
  for (const BucketPlan& b : s->plan().buckets) {
    (b.name.rfind("web/", 0) == 0 ? web : code) += b.weight;
    EXPECT_EQ(b.name.find("math/"), std::string::npos) << "unlisted topic got weight";
    EXPECT_EQ(b.name.find("/q0"), std::string::npos) << "unlisted quality got weight";
    if (b.name.ends_with("/q2")) q2 += b.weight;
    if (b.name.ends_with("/q1")) q1 += b.weight;
  }
  EXPECT_NEAR(web, 2.0 / 3.0, 1e-9);
  EXPECT_NEAR(code, 1.0 / 3.0, 1e-9);
  EXPECT_GT(q2, 2.0 * q1);  // 3x weight on buckets of similar size
  expect_within_one(*s);
}

TEST_F(SamplerTest, ScheduleWithinOneSequenceWith200Buckets) {
  td::TempDir dir;
  std::vector<std::string> topics;
  for (int t = 0; t < 40; ++t) topics.push_back(fmt::format("t{:02d}", t));
  const std::string path = td::build_labelled_dataset(dir.path(), td::labelled_jsonl(topics, 5, 2, 3, 20), 0.0);
  auto ds = Dataset::open(path);
  ASSERT_TRUE(ds.is_ok()) << ds.status().message();
  ASSERT_EQ(ds.value()->buckets().size(), 200u);
  std::shared_ptr<const Dataset> shared(std::move(ds.value()));
  // Uneven weights: bucket i gets weight 1 + (i * 37 % 11).
  std::string w = "total_tokens = 2000\nmax_epochs = 1000\n[weights]\n";
  for (size_t i = 0; i < shared->buckets().size(); ++i)
    w += fmt::format("\"{}\" = {}\n", shared->buckets()[i].name, 1 + (i * 37 % 11));
  auto s = MixtureSampler::open(shared, mixture(w), 1, 0);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_EQ(s.value()->plan().sequences, 2000);
  expect_within_one(*s.value());
}

TEST_F(SamplerTest, ProportionalSubsetAtSeveralScales) {
  const int64_t T = 8;
  // Weights 1:2:3 over N_full = 720 sequences: Q = 120, 240, 360, so every
  // scale below divides every bucket's share and the subset must be exact.
  const std::string body = fmt::format("[weights]\n\"web/q0\" = 1\n\"code/q1\" = 2\n\"math/q2\" = 3\n");
  const std::string top = fmt::format("total_tokens = {}\nseed = 5\n", 720 * T);
  auto full = open(top + body, T);
  ASSERT_TRUE(full);
  ASSERT_EQ(full->plan().sequences, 720);
  std::map<int32_t, int64_t> full_count;
  for (int64_t i = 0; i < 720; ++i) ++full_count[full->slot(i).bucket];
  ASSERT_EQ(full_count[0] + full_count[1] + full_count[2], 720);
  std::vector<int32_t> a(T + 1), b(T + 1);
  for (const char* scale : {"1/2", "1/3", "1/4", "1/5", "1/6", "1/8", "1/10", "1/12", "1/40", "1/120"}) {
    SCOPED_TRACE(scale);
    auto proxy = open(top + "scale = \"" + scale + "\"\n" + body, T);
    ASSERT_TRUE(proxy);
    int num = 0, den = 0;
    std::sscanf(scale, "%d/%d", &num, &den);
    ASSERT_EQ(proxy->plan().sequences, 720 * num / den);
    std::map<int32_t, std::set<int64_t>> got;
    for (int64_t i = 0; i < proxy->plan().sequences; ++i) {
      const auto sl = proxy->slot(i);
      got[sl.bucket].insert(sl.k);
      // Proxy sequence i is the full run's sequence i: same bucket, same tokens.
      const auto fs = full->slot(i);
      ASSERT_EQ(sl.bucket, fs.bucket);
      ASSERT_EQ(sl.k, fs.k);
      proxy->sequence(i, T, a.data());
      full->sequence(i, T, b.data());
      ASSERT_EQ(a, b) << "sequence " << i;
    }
    for (int32_t bk = 0; bk < 3; ++bk) {
      // Exactly the first s of what the full run reads from the bucket.
      const int64_t want = full_count[bk] * num / den;
      ASSERT_EQ(int64_t(got[bk].size()), want) << "bucket " << bk;
      if (want > 0) {
        EXPECT_EQ(*got[bk].begin(), 0);
        EXPECT_EQ(*got[bk].rbegin(), want - 1);
      }
    }
  }
}

TEST_F(SamplerTest, NonDivisibleScalesStayWithinOneSequence) {
  const int64_t T = 16;
  const std::string body = "[weights]\n\"*/q1\" = 0.37\n\"*/q2\" = 0.63\n";
  const std::string top = fmt::format("total_tokens = {}\n", total_train_tokens() / 3);
  auto full = open(top + body, T);
  ASSERT_TRUE(full);
  std::vector<int64_t> fc(full->plan().buckets.size(), 0);
  for (int64_t i = 0; i < full->plan().sequences; ++i) ++fc[size_t(full->slot(i).bucket)];
  for (const char* scale : {"1/7", "2/9", "1/13", "0.3"}) {
    SCOPED_TRACE(scale);
    auto proxy =
        open(top + "scale = " + (scale[1] == '.' ? std::string(scale) : "\"" + std::string(scale) + "\"") + "\n" + body, T);
    ASSERT_TRUE(proxy);
    const double s = double(proxy->plan().scale_num) / double(proxy->plan().scale_den);
    std::vector<int64_t> pc(fc.size(), 0);
    for (int64_t i = 0; i < proxy->plan().sequences; ++i) ++pc[size_t(proxy->slot(i).bucket)];
    for (size_t b = 0; b < fc.size(); ++b) EXPECT_LT(std::abs(double(pc[b]) - s * double(fc[b])), 1.0) << b;
  }
}

TEST_F(SamplerTest, SequencesAreTheBucketStreamAndNothingRepeats) {
  const int64_t T = 16;
  auto s = open(fmt::format("total_tokens = {}\nseed = 11\n", total_train_tokens() * 9 / 10), T);
  ASSERT_TRUE(s);
  const int32_t eod = ds_->tokenizer().special(Special::kEndOfDocument);
  // Expected stream per plan bucket: documents in the sampler's order, each + EOD.
  std::vector<std::vector<int32_t>> stream(s->plan().buckets.size());
  for (size_t b = 0; b < stream.size(); ++b) {
    const ShardReader& sh = *ds_->buckets()[size_t(s->plan().buckets[b].bucket)].train;
    std::set<int64_t> docs;
    for (int64_t r = 0; r < sh.n_docs(); ++r) {
      const int64_t d = s->doc_at(int32_t(b), 0, r);
      ASSERT_TRUE(docs.insert(d).second) << "document order is not a permutation";
      std::vector<int32_t> t(size_t(sh.doc_length(d)));
      sh.copy(sh.doc_begin(d), sh.doc_length(d), t.data());
      stream[b].insert(stream[b].end(), t.begin(), t.end());
      stream[b].push_back(eod);
    }
    EXPECT_EQ(int64_t(docs.size()), sh.n_docs());
  }
  const int64_t ahead = 3;  // model.mtp_depth
  std::vector<int32_t> seq(T + 1), mtp(T + 1 + ahead);
  std::vector<int64_t> next(stream.size(), int64_t(0));
  int64_t checked_ahead = 0;
  for (int64_t i = 0; i < s->plan().sequences; ++i) {
    const auto sl = s->slot(i);
    ASSERT_EQ(sl.k, next[size_t(sl.bucket)]++) << "buckets are read front to back";
    s->sequence(i, T, seq.data());
    const auto& st = stream[size_t(sl.bucket)];
    ASSERT_LE((sl.k + 1) * T + 1, int64_t(st.size())) << "read past one epoch";
    ASSERT_TRUE(std::equal(seq.begin(), seq.end(), st.begin() + sl.k * T)) << "sequence " << i;
    // The same sequence with MTP targets: the same T + 1 ids, then the stream's next `ahead` (what the
    // bucket's next sequence starts with), so slot k still consumes [k T, k T + T) and the ledger holds.
    s->sequence(i, T, ahead, mtp.data());
    ASSERT_TRUE(std::equal(seq.begin(), seq.end(), mtp.begin())) << "sequence " << i;
    if ((sl.k + 1) * T + 1 + ahead <= int64_t(st.size())) {
      ASSERT_TRUE(std::equal(mtp.begin(), mtp.end(), st.begin() + sl.k * T)) << "sequence " << i;
      ++checked_ahead;
    }
  }
  EXPECT_GT(checked_ahead, s->plan().sequences / 2);
  // A different seed orders documents differently.
  auto other = open(fmt::format("total_tokens = {}\nseed = 12\n", total_train_tokens() * 9 / 10), T);
  int differ = 0;
  for (int64_t r = 0; r < 10; ++r) differ += other->doc_at(0, 0, r) != s->doc_at(0, 0, r);
  EXPECT_GT(differ, 0);
}

TEST_F(SamplerTest, DeterministicAcrossInstancesAndAccessOrder) {
  const int64_t T = 16;
  const std::string text = fmt::format("total_tokens = {}\n[weights]\n\"web/*\" = 1\n\"code/*\" = 2\n",
                                       total_train_tokens() / 4);
  auto a = open(text, T), b = open(text, T);
  ASSERT_TRUE(a && b);
  const int64_t n = a->plan().sequences;
  std::vector<int32_t> x(T + 1), y(T + 1);
  // b is read backwards and in strides (as a resumed run or another rank would).
  std::vector<std::vector<int32_t>> from_b(static_cast<size_t>(n));
  for (int64_t i = n - 1; i >= 0; i -= 3) {
    from_b[size_t(i)].resize(T + 1);
    b->sequence(i, T, from_b[size_t(i)].data());
  }
  for (int64_t i = 0; i < n; ++i) {
    a->sequence(i, T, x.data());
    if (!from_b[size_t(i)].empty()) ASSERT_EQ(x, from_b[size_t(i)]) << i;
    b->sequence(i, T, y.data());
    ASSERT_EQ(x, y) << i;
  }
  // The ledger is a pure function of the sequence count.
  std::map<std::string, int64_t> counted;
  for (int64_t i = 0; i < n; ++i) {
    counted[a->plan().buckets[size_t(a->slot(i).bucket)].name] += T;
    if (i % 97 == 0 || i == n - 1) {
      auto fresh = open(text, T);
      for (const auto& [name, tokens] : fresh->ledger(i + 1)) EXPECT_EQ(tokens, counted[name]) << name << " at " << i;
    }
  }
}

TEST_F(SamplerTest, RefusesPlansThatRepeatData) {
  // Twice the corpus: every bucket in the mixture would need a second epoch.
  const std::string text = fmt::format("total_tokens = {}\n[weights]\n\"web/*\" = 1\n\"code/q0\" = 1\n",
                                       total_train_tokens() * 2);
  const std::string text3 = fmt::format("total_tokens = {}\nmax_epochs = 10\n[weights]\n\"web/*\" = 1\n\"code/q0\" = 1\n",
                                        total_train_tokens() * 2);
  auto p = plan_mixture(*ds_, mixture(text), 16);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(p.value().violations.size(), 4u);
  auto s = MixtureSampler::open(ds_, mixture(text), 16, 0);
  ASSERT_FALSE(s.is_ok());
  const std::string msg = s.status().message();
  EXPECT_THAT(msg, HasSubstr("mix.toml: the plan would repeat data in 4 buckets"));
  for (const char* b : {"web/q0", "web/q1", "web/q2", "code/q0"}) EXPECT_THAT(msg, HasSubstr(std::string("bucket ") + b));
  EXPECT_THAT(msg, HasSubstr("short by"));
  // max_epochs = 3 allows it, and the stream then continues into a new epoch order.
  auto ok = MixtureSampler::open(ds_, mixture(text3), 16, 0);
  ASSERT_TRUE(ok.is_ok()) << ok.status().message();
  std::vector<int32_t> seq(17);
  for (int64_t i = 0; i < ok.value()->plan().sequences; ++i) ok.value()->sequence(i, 16, seq.data());
  EXPECT_NE(ok.value()->doc_at(0, 0, 0) * 1000 + ok.value()->doc_at(0, 0, 1),
            ok.value()->doc_at(0, 1, 0) * 1000 + ok.value()->doc_at(0, 1, 1));
}

TEST_F(SamplerTest, BudgetAndUnknownBuckets) {
  const std::string text = "total_tokens = 1600\n";
  auto over = MixtureSampler::open(ds_, mixture(text), 16, 101);
  ASSERT_FALSE(over.is_ok());
  EXPECT_THAT(over.status().message(), HasSubstr("the run reads 101 sequences"));
  EXPECT_TRUE(MixtureSampler::open(ds_, mixture(text), 16, 100).is_ok());
  auto unknown = plan_mixture(*ds_, mixture("total_tokens = 1600\n[weights]\n\"web/q9\" = 1\n"), 16);
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("weights.\"web/q9\": unknown bucket"));
  auto twice = plan_mixture(*ds_, mixture("total_tokens = 1600\n[weights]\n\"web/*\" = 1\n\"*/q1\" = 1\n"), 16);
  ASSERT_FALSE(twice.is_ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("bucket \"web/q1\" matches both"));
  auto topic = plan_mixture(*ds_, mixture("total_tokens = 1600\n[topic_weights]\nprose = 1\n"), 16);
  ASSERT_FALSE(topic.is_ok());
  EXPECT_THAT(topic.status().message(), HasSubstr("topic_weights.\"prose\": unknown topic"));
}

TEST_F(SamplerTest, EvalSequencesComeFromTheHeldOutSplit) {
  auto s = open("total_tokens = 1600\n", 16);
  ASSERT_TRUE(s);
  const auto names = s->eval_buckets();
  ASSERT_EQ(names.size(), 9u);
  const int32_t eod = ds_->tokenizer().special(Special::kEndOfDocument);
  for (size_t k = 0; k < names.size(); ++k) {
    const ShardReader& sh = *ds_->buckets()[size_t(ds_->find(names[k]))].eval;
    std::vector<int32_t> st;
    for (int64_t d = 0; d < sh.n_docs(); ++d) {
      for (int64_t i = 0; i < sh.doc_length(d); ++i) st.push_back(sh.token(sh.doc_begin(d) + i));
      st.push_back(eod);
    }
    std::vector<int32_t> seq(17);
    ASSERT_TRUE(s->bucket_eval_sequence(int64_t(k), 1, 16, seq.data()));
    EXPECT_TRUE(std::equal(seq.begin(), seq.end(), st.begin() + 16)) << names[k];
  }
  std::vector<int32_t> seq(17);
  EXPECT_FALSE(s->bucket_eval_sequence(int64_t(names.size()), 0, 16, seq.data()));
}

}  // namespace
}  // namespace mt
