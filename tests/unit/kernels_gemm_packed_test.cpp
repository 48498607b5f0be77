// kernels_gemm_packed_test.cpp — packed GEMM weights (gemm.h,
// gemm_register_packed_weights): a product that reads a registered weight
// gives the bits of the same product on the weight as stored, forward, input
// gradient and one-thread tiles, fp32 and bf16; a version bump makes it read
// changed weights; copies are counted and freed only by their owner.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/bf16.h"
#include "kernels/cpu/gemm.h"
#include "support/random.h"

namespace mt {
namespace {

using testing::randn;

struct Products {
  std::vector<float> y, dx, tile;
};

// y = x W^T, dx = dy W and one 48-row tile of y on this thread, with W at `w` inside the weights.
Products run(const float* w, const void* w_operand, const std::vector<float>& x, const std::vector<float>& dy,
             int64_t M, int64_t N, int64_t K, MatmulPrecision p) {
  Products r{std::vector<float>(M * N), std::vector<float>(M * K), std::vector<float>(48 * N)};
  linear_forward(r.y.data(), x.data(), w, M, N, K, p);
  linear_backward_input(r.dx.data(), dy.data(), w, M, N, K, 0.0f, p);
  if (p == MatmulPrecision::kFp32 || gemm_native_bf16()) {
    std::vector<bf16> x16(48 * K);
    for (int64_t i = 0; i < 48 * K; ++i) x16[size_t(i)] = f32_to_bf16(x[size_t(i)]);
    const void* a = p == MatmulPrecision::kFp32 ? static_cast<const void*>(x.data()) : x16.data();
    gemm_on_thread(r.tile.data(), a, w_operand, GemmShape{48, N, K, Trans::kNo, Trans::kYes}, 0.0f, p);
  }
  return r;
}

bool same(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class GemmPacked : public ::testing::TestWithParam<MatmulPrecision> {};

TEST_P(GemmPacked, SameBitsAsPlainAndFollowsTheVersion) {
  const MatmulPrecision p = GetParam();
  const int64_t M = 200, N = 96, K = 160, skip = 1000;  // W sits inside a larger parameter buffer
  std::vector<float> params = randn(skip + N * K + 500, 0.5f, 11);
  std::vector<bf16> shadow(params.size());
  auto refresh_shadow = [&] {
    for (size_t i = 0; i < params.size(); ++i) shadow[i] = f32_to_bf16(params[i]);
  };
  refresh_shadow();
  const std::vector<float> x = randn(M * K, 1.0f, 12), dy = randn(M * N, 1.0f, 13);
  const float* w = params.data() + skip;
  const void* w_operand = p == MatmulPrecision::kFp32 ? static_cast<const void*>(w) : shadow.data() + skip;
  gemm_register_bf16_shadow(params.data(), shadow.data(), int64_t(params.size()));

  const Products plain = run(w, w_operand, x, dy, M, N, K, p);
  ASSERT_EQ(gemm_packed_bytes(), 0);
  gemm_register_packed_weights(params.data(), int64_t(params.size()));
  const Products packed = run(w, w_operand, x, dy, M, N, K, p);
  EXPECT_TRUE(same(plain.y, packed.y));
  EXPECT_TRUE(same(plain.dx, packed.dx));
  EXPECT_TRUE(same(plain.tile, packed.tile));
  const bool emulated = p == MatmulPrecision::kBf16 && !gemm_native_bf16();  // reads rounded copies, never W
  // A kernel that reads W as stored, or whose packed form is another kernel, keeps the plain path (nothing
  // packed); whatever is packed holds both layouts.
  const int64_t packed_bytes = gemm_packed_bytes();
  if (emulated) EXPECT_EQ(packed_bytes, 0);
  if (packed_bytes > 0) EXPECT_GE(packed_bytes, 2 * N * K * (p == MatmulPrecision::kFp32 ? 4 : 2));

  // New values: after the bump the products read them (against a fresh plain run on the same values).
  for (int64_t i = 0; i < N * K; ++i) params[size_t(skip + i)] *= -0.75f;
  refresh_shadow();
  gemm_weights_changed();
  const Products packed2 = run(w, w_operand, x, dy, M, N, K, p);
  gemm_unregister_packed_weights(x.data());  // not the owner: nothing happens
  EXPECT_EQ(gemm_packed_bytes() > 0, packed_bytes > 0);
  gemm_unregister_packed_weights(params.data());
  EXPECT_EQ(gemm_packed_bytes(), 0);
  const Products plain2 = run(w, w_operand, x, dy, M, N, K, p);
  EXPECT_TRUE(same(plain2.y, packed2.y));
  EXPECT_TRUE(same(plain2.dx, packed2.dx));
  EXPECT_TRUE(same(plain2.tile, packed2.tile));
  EXPECT_FALSE(same(plain.y, plain2.y));  // the weights did change
  gemm_register_bf16_shadow(nullptr, nullptr, 0);
}

// gemm_pack_final_weights fills a weight's copies once its ranges have
// covered all of it, from the values then, current for the next version:
// after the bump the products read exactly those (the bits of plain products
// on them), not values written after the fill. Ranges that miss part of a
// weight, or lie outside the registered weights, leave its copies to the
// products.
TEST_P(GemmPacked, FinalWeightsPackedAheadAreWhatTheNextVersionReads) {
  const MatmulPrecision p = GetParam();
  if (p == MatmulPrecision::kBf16 && !gemm_native_bf16()) GTEST_SKIP() << "emulated bf16 packs nothing";
  const int64_t M = 120, N = 96, K = 160, skip = 1000;
  std::vector<float> params = randn(skip + N * K + 500, 0.5f, 21);
  std::vector<bf16> shadow(params.size());
  const std::vector<float> x = randn(M * K, 1.0f, 22), dy = randn(M * N, 1.0f, 23);
  const float* w = params.data() + skip;
  const void* w_operand = p == MatmulPrecision::kFp32 ? static_cast<const void*>(w) : shadow.data() + skip;
  auto set_w = [&](const std::vector<float>& v) {  // W's values and their shadow, no bump
    std::copy(v.begin(), v.end(), params.begin() + skip);
    for (size_t i = 0; i < params.size(); ++i) shadow[i] = f32_to_bf16(params[i]);
  };
  auto plain_on = [&](const std::vector<float>& v) {  // unpacked products on W = v
    set_w(v);
    gemm_unregister_packed_weights(params.data());
    Products r = run(w, w_operand, x, dy, M, N, K, p);
    gemm_register_packed_weights(params.data(), int64_t(params.size()));
    run(w, w_operand, x, dy, M, N, K, p);  // the products make their copies again
    return r;
  };
  const std::vector<float> first = randn(N * K, 0.5f, 24), final_w = randn(N * K, 0.5f, 25),
                           later = randn(N * K, 0.5f, 26);
  gemm_register_bf16_shadow(params.data(), shadow.data(), int64_t(params.size()));
  gemm_register_packed_weights(params.data(), int64_t(params.size()));
  const Products on_final = plain_on(final_w), on_later = plain_on(later);
  plain_on(first);
  if (gemm_packed_bytes() == 0) {
    gemm_unregister_packed_weights(params.data());
    gemm_register_bf16_shadow(nullptr, nullptr, 0);
    GTEST_SKIP() << "this CPU's kernels read W as stored: nothing packed";
  }

  // Reported final over the whole of W, in two ranges (as an operand that
  // spans two tensors is), then bumped: later values are not read.
  set_w(final_w);
  gemm_pack_final_weights(x.data(), int64_t(x.size()));  // not the registered weights: nothing
  gemm_pack_final_weights(params.data() + skip + N * K / 3, N * K - N * K / 3);
  gemm_pack_final_weights(params.data() + skip - 7, 7 + N * K / 3);  // with values before W
  gemm_weights_changed();
  set_w(later);
  Products r = run(w, w_operand, x, dy, M, N, K, p);
  EXPECT_TRUE(same(on_final.y, r.y));
  EXPECT_TRUE(same(on_final.dx, r.dx));

  // A range without W's last value fills nothing: the products after the
  // bump pack what W holds then.
  plain_on(first);
  set_w(final_w);
  gemm_pack_final_weights(params.data() + skip, N * K - 1);
  gemm_weights_changed();
  set_w(later);
  r = run(w, w_operand, x, dy, M, N, K, p);
  EXPECT_TRUE(same(on_later.y, r.y));
  EXPECT_TRUE(same(on_later.dx, r.dx));
  EXPECT_FALSE(same(on_final.y, on_later.y));  // the two readings differ
  gemm_unregister_packed_weights(params.data());
  gemm_register_bf16_shadow(nullptr, nullptr, 0);
}

INSTANTIATE_TEST_SUITE_P(Precisions, GemmPacked, ::testing::Values(MatmulPrecision::kFp32, MatmulPrecision::kBf16),
                         [](const auto& info) { return info.param == MatmulPrecision::kFp32 ? "fp32" : "bf16"; });

}  // namespace
}  // namespace mt
