// kernels_grouped_swiglu_test.cpp — the grouped expert kernel against one SwiGLU
// MLP per expert (swiglu_ffn.h, itself checked against finite differences):
// equal up to summation order in fp32, within the bf16 tolerance in bf16,
// on segments that are empty, shorter than a tile, or span several tiles
// with a ragged end; and bitwise the same at 1, 2 and 3 threads, whether a
// task is a whole expert or a row tile.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cpu/grouped_swiglu.h"
#include "model/swiglu_ffn.h"
#include "support/compare.h"
#include "support/random.h"

namespace mt {
namespace {

using testing::kBf16Tol;
using testing::randn;
using testing::relative_error;

struct Problem {
  int64_t F, Din;
  std::vector<int64_t> begin;  // row offsets, one segment per expert
  std::vector<float> x, dy, w13, w2;
  int64_t experts() const { return int64_t(begin.size()) - 1; }
  int64_t rows() const { return begin.back(); }
};

// Segments of 0, 48, 144 and 16 rows, and one of three row tiles whose last
// is ragged and not a multiple of 16.
Problem problem(int64_t F, int64_t Din) {
  const int64_t long_segment = 2 * kGroupedRowTile + 44;
  Problem p{F, Din, {0, 0, 48, 192, 192 + long_segment, 208 + long_segment}, {}, {}, {}, {}};
  const int64_t E = p.experts(), R = p.rows();
  p.x = randn(R * Din, 1.0f, 11);
  p.dy = randn(R * Din, 1.0f, 12);
  p.w13 = randn(E * 2 * F * Din, 1.0f / std::sqrt(float(Din)), 13);
  p.w2 = randn(E * Din * F, 1.0f / std::sqrt(float(F)), 14);
  return p;
}

struct Result {
  std::vector<float> y, dx, dw13, dw2;
};

Result run(const Problem& pr, bool grouped, MatmulPrecision prec) {
  const int64_t E = pr.experts(), R = pr.rows(), F = pr.F, Din = pr.Din;
  Result r{std::vector<float>(R * Din), std::vector<float>(R * Din), std::vector<float>(E * 2 * F * Din, 0.5f),
           std::vector<float>(E * Din * F, 0.5f)};  // gradients accumulate onto what is there
  std::vector<float> h13(R * 2 * F), z(R * F), dh13(R * 2 * F), dz(R * F);
  std::vector<const float*> w13(E), w2(E);
  std::vector<WeightGrad> dw13, dw2;
  for (int64_t i = 0; i < E; ++i) {
    w13[i] = pr.w13.data() + i * 2 * F * Din;
    w2[i] = pr.w2.data() + i * Din * F;
    dw13.push_back(r.dw13.data() + i * 2 * F * Din);
    dw2.push_back(r.dw2.data() + i * Din * F);
  }
  if (grouped) {
    const ExpertGroup g{E, pr.begin.data(), F, Din, w13.data(), w2.data()};
    grouped_swiglu_forward(r.y.data(), h13.data(), z.data(), pr.x.data(), g, prec);
    grouped_swiglu_backward(r.dx.data(), dw13.data(), dw2.data(), dh13.data(), pr.dy.data(), pr.x.data(),
                            h13.data(), z.data(), g, prec);
    return r;
  }
  for (int64_t i = 0; i < E; ++i) {
    const int64_t b = pr.begin[i], M = pr.begin[i + 1] - b;
    const SwigluFfnDims d{M, F, Din};
    swiglu_ffn_forward(r.y.data() + b * Din, h13.data() + b * 2 * F, z.data() + b * F, pr.x.data() + b * Din,
                       w13[i], w2[i], d, 0.0f, prec);
    swiglu_ffn_backward(r.dx.data() + b * Din, dw13[i], dw2[i], dz.data(), dh13.data(), pr.dy.data() + b * Din,
                        pr.x.data() + b * Din, h13.data() + b * 2 * F, z.data() + b * F, w13[i], w2[i], d, 0.0f,
                        prec);
  }
  return r;
}

class GroupedSwiglu : public ::testing::TestWithParam<std::pair<int64_t, int64_t>> {};

TEST_P(GroupedSwiglu, Fp32IsOneFfnPerExpertUpToSummationOrder) {
  const Problem pr = problem(GetParam().first, GetParam().second);
  const Result ref = run(pr, false, MatmulPrecision::kFp32);
  const Result got = run(pr, true, MatmulPrecision::kFp32);
  EXPECT_LT(relative_error(got.y, ref.y), 1e-5);
  EXPECT_LT(relative_error(got.dx, ref.dx), 1e-5);
  EXPECT_LT(relative_error(got.dw13, ref.dw13), 1e-5);
  EXPECT_LT(relative_error(got.dw2, ref.dw2), 1e-5);
  // The empty expert's gradients are untouched.
  const int64_t n13 = 2 * pr.F * pr.Din;
  EXPECT_TRUE(std::all_of(got.dw13.begin(), got.dw13.begin() + n13, [](float v) { return v == 0.5f; }));
}

TEST_P(GroupedSwiglu, Bf16IsWithinItsToleranceOfFp32) {
  const Problem pr = problem(GetParam().first, GetParam().second);
  const Result ref = run(pr, false, MatmulPrecision::kFp32);
  const Result got = run(pr, true, MatmulPrecision::kBf16);
  const Result per_expert = run(pr, false, MatmulPrecision::kBf16);
  for (const auto& [a, b, c] : {std::tuple{&got.y, &ref.y, &per_expert.y}, std::tuple{&got.dx, &ref.dx, &per_expert.dx},
                                std::tuple{&got.dw13, &ref.dw13, &per_expert.dw13},
                                std::tuple{&got.dw2, &ref.dw2, &per_expert.dw2}}) {
    const double e = relative_error(*a, *b);
    EXPECT_LT(e, kBf16Tol);
    EXPECT_GT(e, 1e-5) << "bf16 rounding left no trace";
    // The per-expert GEMMs round the same operands: only summation order differs.
    EXPECT_LT(relative_error(*a, *c), 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, GroupedSwiglu,
                         ::testing::Values(std::pair<int64_t, int64_t>{32, 48}, std::pair<int64_t, int64_t>{88, 64}),
                         [](const auto& i) {
                           std::ostringstream name;
                           name << "F" << i.param.first << "_Din" << i.param.second;
                           return name.str();
                         });

// One thread runs whole experts as tasks (four experts with rows, four per
// thread), two threads run row tiles: this also checks the two schedules.
TEST(GroupedSwigluThreads, BitwiseAtOneAndTwoThreads) {
  const int saved = omp_get_max_threads();
  const Problem pr = problem(88, 64);
  for (MatmulPrecision prec : {MatmulPrecision::kFp32, MatmulPrecision::kBf16}) {
    omp_set_num_threads(1);
    const Result one = run(pr, true, prec);
    omp_set_num_threads(2);
    const Result two = run(pr, true, prec);
    for (const auto& [a, b] : {std::pair{&one.y, &two.y}, std::pair{&one.dx, &two.dx},
                               std::pair{&one.dw13, &two.dw13}, std::pair{&one.dw2, &two.dw2}})
      EXPECT_EQ(0, std::memcmp(a->data(), b->data(), a->size() * sizeof(float)))
          << (prec == MatmulPrecision::kFp32 ? "fp32" : "bf16");
  }
  omp_set_num_threads(saved);
}

// Ten experts with rows: whole-expert tasks at one and two threads (at least
// four per thread), row-tile tasks at three. The same products either way.
TEST(GroupedSwigluThreads, WholeExpertAndTileTasksGiveTheSameBits) {
  const int saved = omp_get_max_threads();
  Problem pr = problem(32, 48);
  for (int64_t i = 0; i < 5; ++i) pr.begin.push_back(pr.begin.back() + 16 * (i + 1) + 8);
  const int64_t E = pr.experts(), R = pr.rows();
  pr.x = randn(R * pr.Din, 1.0f, 21);
  pr.dy = randn(R * pr.Din, 1.0f, 22);
  pr.w13 = randn(E * 2 * pr.F * pr.Din, 0.15f, 23);
  pr.w2 = randn(E * pr.Din * pr.F, 0.15f, 24);
  for (MatmulPrecision prec : {MatmulPrecision::kFp32, MatmulPrecision::kBf16}) {
    std::vector<Result> runs;
    for (int threads : {1, 2, 3}) {
      omp_set_num_threads(threads);
      runs.push_back(run(pr, true, prec));
    }
    for (size_t k = 1; k < runs.size(); ++k)
      for (const auto& [a, b] : {std::pair{&runs[0].y, &runs[k].y}, std::pair{&runs[0].dx, &runs[k].dx},
                                 std::pair{&runs[0].dw13, &runs[k].dw13}, std::pair{&runs[0].dw2, &runs[k].dw2}})
        EXPECT_EQ(0, std::memcmp(a->data(), b->data(), a->size() * sizeof(float)))
            << (prec == MatmulPrecision::kFp32 ? "fp32" : "bf16") << " at " << k + 1 << " threads";
  }
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace mt
