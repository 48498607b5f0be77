// kernels_gemm_add_test.cpp — gemm_add (gemm.h): C = op(A) op(B) + addend
// gives the bits of the addend copied into C and a beta-1 product, fp32 and
// bf16, on weights as stored and on registered (shadowed, packed) weights,
// on the skinny fp32 path (a dimension <= 32), with C inside a wider buffer
// (ldc), and with the addend being C itself.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/bf16.h"
#include "kernels/cpu/gemm.h"
#include "support/random.h"

namespace mt {
namespace {

using testing::randn;

bool same(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Case {
  int64_t M, N, K, ldc;  // ldc 0: dense
};

class GemmAdd : public ::testing::TestWithParam<MatmulPrecision> {};

TEST_P(GemmAdd, SameBitsAsCopyingTheAddendForABetaOneProduct) {
  const MatmulPrecision p = GetParam();
  for (const Case c : {Case{300, 96, 160, 0}, Case{64, 24, 80, 0}, Case{100, 80, 48, 112}}) {
    SCOPED_TRACE(::testing::Message() << c.M << " x " << c.N << " x " << c.K << " ldc " << c.ldc);
    const int64_t ldc = c.ldc ? c.ldc : c.N, skip = 200;
    std::vector<float> params = randn(skip + c.N * c.K + 50, 0.5f, 41);  // W inside the registered weights
    std::vector<bf16> shadow(params.size());
    for (size_t i = 0; i < params.size(); ++i) shadow[i] = f32_to_bf16(params[i]);
    const std::vector<float> a = randn(c.M * c.K, 1.0f, 42), addend = randn(c.M * ldc, 1.0f, 43);
    const float* w = params.data() + skip;
    const GemmShape s{c.M, c.N, c.K, Trans::kNo, Trans::kYes, 0, 0, c.ldc};
    auto copied = [&] {
      std::vector<float> out = addend;
      gemm(out.data(), a.data(), w, s, 1.0f, p);
      return out;
    };
    auto added = [&] {
      std::vector<float> out(addend.size(), -7.0f);
      for (int64_t i = 0; i < c.M; ++i)  // what lies between C's rows is not C's
        std::copy(addend.begin() + i * ldc + c.N, addend.begin() + (i + 1) * ldc, out.begin() + i * ldc + c.N);
      gemm_add(out.data(), a.data(), w, s, addend.data(), p);
      return out;
    };
    const std::vector<float> want = copied();
    EXPECT_TRUE(same(want, added())) << "weights as stored";
    std::vector<float> in_place = addend;
    gemm_add(in_place.data(), a.data(), w, s, in_place.data(), p);
    EXPECT_TRUE(same(want, in_place)) << "the addend is C";

    gemm_register_bf16_shadow(params.data(), shadow.data(), int64_t(params.size()));
    gemm_register_packed_weights(params.data(), int64_t(params.size()));
    const std::vector<float> want_registered = copied();
    EXPECT_TRUE(same(want_registered, added())) << "registered weights";
    EXPECT_TRUE(same(want_registered, added())) << "registered weights, the copies made";
    gemm_unregister_packed_weights(params.data());
    gemm_register_bf16_shadow(nullptr, nullptr, 0);
    EXPECT_TRUE(same(want, want_registered));
  }
}

INSTANTIATE_TEST_SUITE_P(Precisions, GemmAdd, ::testing::Values(MatmulPrecision::kFp32, MatmulPrecision::kBf16),
                         [](const auto& info) { return info.param == MatmulPrecision::kFp32 ? "fp32" : "bf16"; });

}  // namespace
}  // namespace mt
