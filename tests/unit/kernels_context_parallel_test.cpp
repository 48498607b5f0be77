// kernels_context_parallel_test.cpp — the attention kernels with query rows
// at given positions (AttentionDims::Tq, q_pos: a context-parallel rank's two
// load-balanced chunks, model/context_chunks.h) against all the sequence's
// keys: each rank's o, lse and dq are the full run's rows at its positions,
// and its partial dk, dv summed over the ranks are the full run's; for both
// kernels, fp32 and bf16, global and windowed, with and without documents.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu/attention.h"
#include "model/context_chunks.h"
#include "support/attention_kernels.h"
#include "support/random.h"

namespace mt {
namespace {

using testing::randn;

using Kernel = testing::AttentionKernelKind;
constexpr auto forward = testing::run_forward;
constexpr auto backward = testing::run_backward;

// Rows `pos` of every (b, head) of a (B, heads, T, width) tensor: (B, heads, pos.size(), width).
std::vector<float> rows_at(const std::vector<float>& x, int64_t B, int64_t heads, int64_t T, int64_t width,
                           const std::vector<int32_t>& pos) {
  std::vector<float> out;
  for (int64_t bh = 0; bh < B * heads; ++bh)
    for (int32_t p : pos) {
      const float* src = x.data() + (bh * T + p) * width;
      out.insert(out.end(), src, src + width);
    }
  return out;
}

struct Case {
  Kernel kernel;
  int64_t window, cp;
  bool documents;
  std::string name;
};

class AttentionQueryRows : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionQueryRows, EachRankComputesItsRowsOfTheFullRun) {
  const Case c = GetParam();
  const int64_t B = 2, H = 4, Hkv = 2, Dh = 16, T = 192;
  AttentionDims full{B, H, Hkv, T, Dh, c.window};
  std::vector<int32_t> starts(size_t(B * T));  // documents of 50 tokens in row 0, one document in row 1
  for (int64_t t = 0; t < T; ++t) starts[size_t(t)] = int32_t(t / 50 * 50);
  if (c.documents) full.doc_start = starts.data();
  auto q = randn(B * H * T * Dh, 1.5f, 1), k = randn(B * Hkv * T * Dh, 1.5f, 2), v = randn(B * Hkv * T * Dh, 1.0f, 3),
       dout = randn(B * H * T * Dh, 1.0f, 4);
  std::vector<float> o(q.size()), lse(size_t(B * H * T)), dq(q.size()), dk(k.size()), dv(v.size());
  forward(c.kernel, o.data(), lse.data(), q.data(), k.data(), v.data(), full);
  backward(c.kernel, dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(), v.data(), o.data(), lse.data(),
           full);
  const double tol = c.kernel == Kernel::kMatmulBf16 ? 2e-2 : 2e-5;
  auto expect_near = [&](const char* what, const std::vector<float>& got, const std::vector<float>& want, int64_t r) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], tol * (1.0 + std::abs(want[i]))) << what << " rank " << r << " element " << i;
  };
  std::vector<float> dk_sum(dk.size(), 0.0f), dv_sum(dv.size(), 0.0f);
  for (int64_t r = 0; r < c.cp; ++r) {
    const std::vector<int32_t> pos = context_positions(T, c.cp, r);
    const int64_t Tq = int64_t(pos.size());
    AttentionDims d = full;
    d.Tq = Tq;
    d.q_pos = pos.data();
    std::vector<int32_t> local_starts;
    for (int64_t b = 0; b < B; ++b)
      for (int32_t p : pos) local_starts.push_back(starts[size_t(b * T + p)]);
    d.doc_start = c.documents ? local_starts.data() : nullptr;
    const auto q1 = rows_at(q, B, H, T, Dh, pos), do1 = rows_at(dout, B, H, T, Dh, pos);
    std::vector<float> o1(q1.size()), lse1(size_t(B * H * Tq)), dq1(q1.size()), dk1(k.size()), dv1(v.size());
    forward(c.kernel, o1.data(), lse1.data(), q1.data(), k.data(), v.data(), d);
    backward(c.kernel, dq1.data(), dk1.data(), dv1.data(), do1.data(), q1.data(), k.data(), v.data(), o1.data(),
             lse1.data(), d);
    expect_near("o", o1, rows_at(o, B, H, T, Dh, pos), r);
    expect_near("lse", lse1, rows_at(lse, B, H, T, 1, pos), r);
    expect_near("dq", dq1, rows_at(dq, B, H, T, Dh, pos), r);
    for (size_t i = 0; i < dk.size(); ++i) dk_sum[i] += dk1[i], dv_sum[i] += dv1[i];
  }
  expect_near("dk summed over the ranks", dk_sum, dk, -1);
  expect_near("dv summed over the ranks", dv_sum, dv, -1);
}

std::vector<Case> cases() {
  std::vector<Case> v;
  const std::pair<Kernel, const char*> kernels[] = {
      {Kernel::kBlocked, "blocked"}, {Kernel::kMatmulFp32, "matmul_fp32"}, {Kernel::kMatmulBf16, "matmul_bf16"}};
  for (auto [k, kn] : kernels)
    for (int64_t w : {0, 20})
      for (int64_t cp : {2, 4})
        for (bool docs : {false, true})
          v.push_back(
              {k, w, cp, docs,
               std::string(kn) + "_w" + std::to_string(w) + "_cp" + std::to_string(cp) + (docs ? "_docs" : "")});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Kernels, AttentionQueryRows, ::testing::ValuesIn(cases()),
                         [](const auto& i) { return i.param.name; });

TEST(AttentionQueryRows, BlocksNeverSpanTwoChunks) {
  const std::vector<int32_t> pos = context_positions(96, 2, 0);  // [0, 24) and [72, 96)
  AttentionDims d{1, 1, 1, 96, 8, 0};
  d.Tq = int64_t(pos.size());
  d.q_pos = pos.data();
  const auto blocks = attention_query_blocks(d, 32);
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0], (std::pair<int64_t, int64_t>{0, 24}));
  EXPECT_EQ(blocks[1], (std::pair<int64_t, int64_t>{24, 24}));
  // Rank 1 of cp 2 holds the two middle chunks: one run of consecutive positions.
  const std::vector<int32_t> mid = context_positions(96, 2, 1);
  d.q_pos = mid.data();
  EXPECT_EQ(attention_query_blocks(d, 32).size(), 2u);  // 48 rows in blocks of 32 and 16
  EXPECT_EQ(mid.front(), 24);
  EXPECT_EQ(mid.back(), 71);
}

}  // namespace
}  // namespace mt
