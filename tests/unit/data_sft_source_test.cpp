// data_sft_source_test.cpp — supervised examples packed into rows
// (data/sft_source.h): every row opens with a flagged separator; each
// example lies whole and in order in one row, its prompt flagged, its
// completion and closing separator not; each epoch holds every example
// once, epochs in different orders, the same options the same rows; the
// tail is flagged padding; an example longer than a row is truncated and
// counted; held-out rows for the eval passes; ids outside the vocabulary
// and examples with nothing to train on are refused naming the example.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "core/token_flags.h"
#include "data/sft_source.h"

namespace mt {
namespace {

constexpr int32_t kSep = 1;

// Example i: prompt {10 + i % 7, 20, ...} of 2 + i % 3 ids, completion {100 + i, 30} (ids identify it).
std::vector<SftExample> examples(int n) {
  std::vector<SftExample> v;
  for (int i = 0; i < n; ++i) {
    SftExample e;
    std::vector<int32_t> prompt = {10 + i % 7};
    for (int k = 0; k < 1 + i % 3; ++k) prompt.push_back(20 + k);
    e.spans.push_back({prompt, false});
    e.spans.push_back({{100 + i, 30}, true});
    v.push_back(std::move(e));
  }
  return v;
}

SftSourceOptions options(int64_t seq_len, int64_t epochs = 1) {
  SftSourceOptions o;
  o.seq_len = seq_len;
  o.epochs = epochs;
  o.seed = 7;
  o.separator = kSep;
  o.vocab_size = 400;
  o.name = "x.jsonl";
  return o;
}

// The examples of a row, by their completion id, each checked for shape.
std::vector<int> examples_in_row(const std::vector<int32_t>& row, int64_t seq_len) {
  EXPECT_EQ(row[0], without_loss(kSep)) << "a row opens with a flagged separator";
  std::vector<int> found;
  size_t t = 1;
  while (t < size_t(seq_len + 1) && row[t] != without_loss(kSep)) {
    // prompt (flagged) ... completion {100 + i, 30} then the separator (trained)
    size_t p = t;
    while ((row[p] & kNoLossBit) != 0) ++p;
    EXPECT_GE(p - t, 2u) << "a prompt of at least two flagged ids";
    EXPECT_GE(row[p], 100);
    EXPECT_EQ(row[p + 1], 30);
    EXPECT_EQ(row[p + 2], kSep) << "an example ends with an unflagged separator";
    found.push_back(row[p] - 100);
    t = p + 3;
  }
  for (; t < row.size(); ++t) EXPECT_EQ(row[t], without_loss(kSep)) << "padding is flagged separators";
  return found;
}

TEST(SftSource, RowsHoldWholeExamplesOncePerEpoch) {
  const int64_t seq_len = 24;
  auto src = SftSource::open(examples(50), {}, options(seq_len, 2));
  ASSERT_TRUE(src.is_ok()) << src.status().message();
  const SftSource& s = *src.value();
  EXPECT_EQ(s.document_separator(), kSep);
  std::map<int, int> seen;
  std::vector<int> order;
  for (int64_t r = 0; r < s.capacity(); ++r) {
    std::vector<int32_t> row(size_t(seq_len + 1 + 2), -5);
    s.sequence(r, seq_len, 2, row.data());  // two ids ahead (MTP): padding too
    EXPECT_EQ(row[size_t(seq_len + 1)], without_loss(kSep));
    for (int i : examples_in_row(row, seq_len)) {
      ++seen[i];
      order.push_back(i);
    }
  }
  ASSERT_EQ(seen.size(), 50u);
  for (const auto& [i, n] : seen) EXPECT_EQ(n, 2) << "example " << i;
  const std::vector<int> first(order.begin(), order.begin() + 50), second(order.begin() + 50, order.end());
  EXPECT_NE(first, second) << "both epochs in one order";
  EXPECT_NE(first[0] + first[1] + first[2], 0 + 1 + 2) << "not shuffled";
  EXPECT_GT(s.stats().fill(), 0.7);
  EXPECT_EQ(s.stats().examples, 50);
  EXPECT_EQ(s.stats().truncated, 0);

  auto again = SftSource::open(examples(50), {}, options(seq_len, 2));
  std::vector<int32_t> a(size_t(seq_len + 1)), b(size_t(seq_len + 1));
  for (int64_t r = 0; r < s.capacity(); ++r) {
    s.sequence(r, seq_len, 0, a.data());
    again.value()->sequence(r, seq_len, 0, b.data());
    EXPECT_EQ(a, b) << "row " << r;
  }
}

TEST(SftSource, LongExamplesAreTruncatedAndCounted) {
  std::vector<SftExample> v = examples(3);
  v[1].spans[0].ids.assign(40, 11);  // a 40-id prompt in rows of 16
  auto src = SftSource::open(v, {}, options(16));
  ASSERT_TRUE(src.is_ok());
  EXPECT_EQ(src.value()->stats().truncated, 1);
  EXPECT_NE(src.value()->describe().find("1 truncated"), std::string::npos) << src.value()->describe();
}

TEST(SftSource, HeldOutRowsServeTheEvalPasses) {
  auto src = SftSource::open(examples(20), examples(4), options(32));
  ASSERT_TRUE(src.is_ok());
  std::vector<int32_t> row(33);
  ASSERT_TRUE(src.value()->eval_sequence(0, 32, row.data()));
  EXPECT_EQ(examples_in_row(row, 32).size(), 4u);
  auto none = SftSource::open(examples(20), {}, options(32));
  EXPECT_FALSE(none.value()->eval_sequence(0, 32, row.data()));
}

TEST(SftSource, BadExamplesAreNamed) {
  std::vector<SftExample> v = examples(3);
  v[2].spans[1].ids[0] = 400;
  auto r = SftSource::open(v, {}, options(16));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("x.jsonl: training example 3: token id 400"), std::string::npos)
      << r.status().message();
  v = examples(3);
  v[0].spans[1].ids.clear();
  r = SftSource::open(v, {}, options(16));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("example 1: nothing to train on"), std::string::npos) << r.status().message();
  EXPECT_FALSE(SftSource::open({}, {}, options(16)).is_ok());
}

}  // namespace
}  // namespace mt
