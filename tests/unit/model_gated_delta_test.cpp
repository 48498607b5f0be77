// model_gated_delta_test.cpp — the chunked gated delta rule (kernels/cpu/gated_delta.h) against its
// plain recurrence for chunk sizes that do and do not divide T, the chunked backward against the
// step-by-step one, and bitwise thread-count invariance of forward and backward.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/gated_delta.h"
#include "support/random.h"

namespace mt {
namespace {

using testing::randn;

struct Inputs {
  std::vector<float> q, k, v, g, beta;
};

// q, k unit rows (as the layer feeds them), decays in (-0.6, 0), beta in (0, 1).
Inputs make_inputs(const GatedDeltaDims& d, uint64_t seed) {
  const int64_t rows = d.B * d.H * d.T;
  Inputs in{randn(rows * d.Dk, 1.0f, seed, 1), randn(rows * d.Dk, 1.0f, seed, 2), randn(rows * d.Dv, 1.0f, seed, 3),
            randn(rows, 1.0f, seed, 4), randn(rows, 1.0f, seed, 5)};
  for (std::vector<float>* x : {&in.q, &in.k})
    for (int64_t r = 0; r < rows; ++r) {
      float s = 0.0f;
      for (int64_t e = 0; e < d.Dk; ++e) s += (*x)[r * d.Dk + e] * (*x)[r * d.Dk + e];
      for (int64_t e = 0; e < d.Dk; ++e) (*x)[r * d.Dk + e] /= std::sqrt(s);
    }
  for (int64_t r = 0; r < rows; ++r) {
    in.g[r] = -0.3f * (1.0f + std::tanh(in.g[r]));
    in.beta[r] = 1.0f / (1.0f + std::exp(-in.beta[r]));
  }
  return in;
}

struct Case {
  GatedDeltaDims d;
};

class GatedDeltaChunked : public ::testing::TestWithParam<Case> {};

TEST_P(GatedDeltaChunked, MatchesRecurrence) {
  const GatedDeltaDims d = GetParam().d;
  const Inputs in = make_inputs(d, 3);
  const int64_t no = d.B * d.H * d.T * d.Dv;
  std::vector<float> o(no), ref(no), states(d.B * d.H * gated_delta_chunks(d) * d.Dv * d.Dk);
  std::vector<float> final_state(d.B * d.H * d.Dv * d.Dk, 0.0f);
  gated_delta_forward(o.data(), states.data(), in.q.data(), in.k.data(), in.v.data(), in.g.data(),
                      in.beta.data(), d);
  gated_delta_recurrent(ref.data(), final_state.data(), in.q.data(), in.k.data(), in.v.data(), in.g.data(),
                        in.beta.data(), d);
  double err = 0.0, scale = 0.0;
  for (int64_t i = 0; i < no; ++i) {
    err = std::max(err, double(std::abs(o[i] - ref[i])));
    scale = std::max(scale, double(std::abs(ref[i])));
  }
  EXPECT_GT(scale, 0.1);
  EXPECT_LT(err, 2e-5 * std::max(1.0, scale)) << "max |chunked - recurrent|";
  // The saved state entering chunk 0 is zero and later ones are the recurrence's states.
  for (int64_t i = 0; i < d.Dv * d.Dk; ++i) ASSERT_EQ(states[i], 0.0f);
  if (gated_delta_chunks(d) > 1) {
    const GatedDeltaDims head{1, 1, d.C, d.Dk, d.Dv, d.C};  // first C steps of (b, h) = (0, 0)
    std::vector<float> s(d.Dv * d.Dk, 0.0f), o1(d.C * d.Dv);
    gated_delta_recurrent(o1.data(), s.data(), in.q.data(), in.k.data(), in.v.data(), in.g.data(),
                          in.beta.data(), head);
    for (int64_t i = 0; i < d.Dv * d.Dk; ++i) EXPECT_NEAR(states[d.Dv * d.Dk + i], s[i], 2e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(Table, GatedDeltaChunked,
                         ::testing::Values(Case{{1, 1, 16, 8, 8, 4}}, Case{{2, 3, 37, 16, 8, 8}},
                                           Case{{1, 2, 130, 32, 32, 64}}, Case{{2, 1, 20, 8, 12, 1}},
                                           Case{{1, 2, 9, 8, 8, 64}}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           const GatedDeltaDims& d = i.param.d;
                           return "B" + std::to_string(d.B) + "H" + std::to_string(d.H) + "T" + std::to_string(d.T) +
                                  "Dk" + std::to_string(d.Dk) + "Dv" + std::to_string(d.Dv) + "C" + std::to_string(d.C);
                         });

// The chunked backward against the step-by-step reverse pass: the same gradients to fp32
// round-off. `gate` scales the decays (g in (-0.6 gate, 0)): at 20, e^gamma underflows inside
// a chunk. `every` > 0 starts a document every `every` steps from step 3 (mid-chunk and on chunk starts).
struct BackwardCase {
  GatedDeltaDims d;
  float gate;
  int64_t every;
};

// (B, T) document starts: documents begin at t = 3 and every `every` steps after (every > 0).
std::vector<int32_t> document_starts(const GatedDeltaDims& d, int64_t every) {
  std::vector<int32_t> starts(size_t(d.B * d.T), 0);
  if (every > 0)
    for (int64_t b = 0; b < d.B; ++b)
      for (int64_t t = 3; t < d.T; ++t) starts[size_t(b * d.T + t)] = int32_t(3 + (t - 3) / every * every);
  return starts;
}

class GatedDeltaBackward : public ::testing::TestWithParam<BackwardCase> {};

TEST_P(GatedDeltaBackward, ChunkedMatchesSequential) {
  GatedDeltaDims d = GetParam().d;
  Inputs in = make_inputs(d, 7);
  for (float& x : in.g) x *= GetParam().gate;
  const std::vector<int32_t> starts = document_starts(d, GetParam().every);
  if (GetParam().every > 0) d.doc_start = starts.data();
  const int64_t rows = d.B * d.H * d.T;
  const auto dout = randn(rows * d.Dv, 1.0f, 11);
  std::vector<float> o(rows * d.Dv), st(d.B * d.H * gated_delta_chunks(d) * d.Dv * d.Dk);
  gated_delta_forward(o.data(), st.data(), in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(), d);
  struct Grads {
    std::vector<float> dq, dk, dv, dg, db;
  };
  auto run = [&](auto backward) {
    Grads r{std::vector<float>(rows * d.Dk, NAN), std::vector<float>(rows * d.Dk, NAN),
            std::vector<float>(rows * d.Dv, NAN), std::vector<float>(rows, NAN), std::vector<float>(rows, NAN)};
    backward(r.dq.data(), r.dk.data(), r.dv.data(), r.dg.data(), r.db.data(), dout.data(), in.q.data(), in.k.data(),
             in.v.data(), in.g.data(), in.beta.data(), st.data(), d);
    return r;
  };
  const Grads c = run(gated_delta_backward), s = run(gated_delta_backward_sequential);
  auto check = [](const char* name, const std::vector<float>& x, const std::vector<float>& ref) {
    double err = 0.0, scale = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_TRUE(std::isfinite(x[i])) << name << "[" << i << "] not written";
      err = std::max(err, double(std::abs(x[i] - ref[i])));
      scale = std::max(scale, double(std::abs(ref[i])));
    }
    EXPECT_GT(scale, 1e-3) << name;
    EXPECT_LT(err, 1e-5 * scale) << name << ": max |chunked - sequential| against max |sequential| " << scale;
  };
  check("dq", c.dq, s.dq);
  check("dk", c.dk, s.dk);
  check("dv", c.dv, s.dv);
  check("dg", c.dg, s.dg);
  check("dbeta", c.db, s.db);
  if (d.doc_start)  // a document start's gate has no effect
    for (int64_t bh = 0; bh < d.B * d.H; ++bh)
      for (int64_t t = 1; t < d.T; ++t)
        if (d.resets(bh / d.H, t)) {
          EXPECT_EQ(c.dg[bh * d.T + t], 0.0f);
        }
}

INSTANTIATE_TEST_SUITE_P(
    Table, GatedDeltaBackward,
    ::testing::Values(BackwardCase{{1, 1, 16, 8, 8, 4}, 1.0f, 0}, BackwardCase{{2, 3, 37, 16, 8, 8}, 1.0f, 0},
                      BackwardCase{{1, 2, 130, 32, 32, 64}, 1.0f, 0}, BackwardCase{{2, 1, 20, 8, 12, 1}, 1.0f, 0},
                      BackwardCase{{1, 2, 9, 8, 8, 64}, 1.0f, 0}, BackwardCase{{2, 2, 45, 12, 20, 8}, 1.0f, 5},
                      BackwardCase{{1, 2, 100, 16, 24, 32}, 1.0f, 16}, BackwardCase{{2, 1, 30, 8, 6, 1}, 1.0f, 4},
                      BackwardCase{{1, 2, 150, 32, 16, 64}, 20.0f, 0}, BackwardCase{{1, 1, 70, 16, 16, 16}, 20.0f, 7}),
    [](const ::testing::TestParamInfo<BackwardCase>& i) {
      const GatedDeltaDims& d = i.param.d;
      return "T" + std::to_string(d.T) + "Dk" + std::to_string(d.Dk) + "Dv" + std::to_string(d.Dv) + "C" +
             std::to_string(d.C) + "Gate" + std::to_string(int(i.param.gate)) + "Docs" + std::to_string(i.param.every);
    });

// Output and gradients are bitwise identical with 1 and 2 threads, fp32 and bf16 products alike.
class GatedDeltaThreads : public ::testing::TestWithParam<bool> {};

TEST_P(GatedDeltaThreads, ForwardBackwardInvariant) {
  GatedDeltaDims d{2, 3, 70, 16, 24, 16};
  d.bf16_products = GetParam();
  const Inputs in = make_inputs(d, 5);
  const int64_t rows = d.B * d.H * d.T;
  const auto dout = randn(rows * d.Dv, 1.0f, 9);
  auto run = [&](int threads) {
    omp_set_num_threads(threads);
    std::vector<float> o(rows * d.Dv), st(d.B * d.H * gated_delta_chunks(d) * d.Dv * d.Dk);
    std::vector<float> dq(rows * d.Dk), dk(rows * d.Dk), dv(rows * d.Dv), dg(rows), db(rows);
    gated_delta_forward(o.data(), st.data(), in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(), d);
    gated_delta_backward(dq.data(), dk.data(), dv.data(), dg.data(), db.data(), dout.data(), in.q.data(),
                         in.k.data(), in.v.data(), in.g.data(), in.beta.data(), st.data(), d);
    std::vector<float> all;
    for (const auto* x : {&o, &st, &dq, &dk, &dv, &dg, &db}) all.insert(all.end(), x->begin(), x->end());
    return all;
  };
  const int saved = omp_get_max_threads();
  const auto one = run(1), two = run(2);
  omp_set_num_threads(saved);
  ASSERT_EQ(one.size(), two.size());
  EXPECT_EQ(0, std::memcmp(one.data(), two.data(), one.size() * sizeof(float)));
}
INSTANTIATE_TEST_SUITE_P(Products, GatedDeltaThreads, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "Bf16" : "Fp32"; });

// bf16 chunk products (GatedDeltaDims::bf16_products) against the fp32 kernels: output, saved
// states and every gradient within bf16's rounding (2^-8 relative per operand), in norm, over
// sequences long enough for the state to carry across many chunks, with and without document starts.
class GatedDeltaBf16 : public ::testing::TestWithParam<BackwardCase> {};

TEST_P(GatedDeltaBf16, NearTheFp32Kernels) {
  if (!gated_delta_bf16_products()) GTEST_SKIP() << "no AVX512-BF16 in this build: the products stay fp32";
  GatedDeltaDims d = GetParam().d;
  const Inputs in = make_inputs(d, 13);
  const std::vector<int32_t> starts = document_starts(d, GetParam().every);
  if (GetParam().every > 0) d.doc_start = starts.data();
  const int64_t rows = d.B * d.H * d.T;
  const auto dout = randn(rows * d.Dv, 1.0f, 21);
  auto run = [&](bool bf16) {
    GatedDeltaDims e = d;
    e.bf16_products = bf16;
    std::vector<float> o(rows * d.Dv), st(d.B * d.H * gated_delta_chunks(e) * d.Dv * d.Dk);
    std::vector<float> dq(rows * d.Dk), dk(rows * d.Dk), dv(rows * d.Dv), dg(rows), db(rows);
    gated_delta_forward(o.data(), st.data(), in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(), e);
    gated_delta_backward(dq.data(), dk.data(), dv.data(), dg.data(), db.data(), dout.data(), in.q.data(), in.k.data(),
                         in.v.data(), in.g.data(), in.beta.data(), st.data(), e);
    return std::vector<std::vector<float>>{o, st, dq, dk, dv, dg, db};
  };
  const auto fp32 = run(false), bf16 = run(true);
  const char* names[] = {"o", "states", "dq", "dk", "dv", "dg", "dbeta"};
  for (size_t t = 0; t < fp32.size(); ++t) {
    double err = 0.0, ref = 0.0;
    for (size_t i = 0; i < fp32[t].size(); ++i) {
      ASSERT_TRUE(std::isfinite(bf16[t][i])) << names[t] << "[" << i << "]";
      err += std::pow(double(bf16[t][i]) - fp32[t][i], 2), ref += std::pow(double(fp32[t][i]), 2);
    }
    EXPECT_GT(ref, 1e-6) << names[t];
    EXPECT_LT(std::sqrt(err / ref), 1e-2) << names[t] << ": relative error in norm";
  }
}

INSTANTIATE_TEST_SUITE_P(Table, GatedDeltaBf16,
                         ::testing::Values(BackwardCase{{2, 2, 256, 64, 64, 64}, 1.0f, 0},
                                           BackwardCase{{1, 2, 150, 32, 16, 64}, 1.0f, 0},
                                           BackwardCase{{2, 3, 37, 16, 8, 8}, 1.0f, 0},
                                           BackwardCase{{2, 2, 45, 12, 20, 8}, 1.0f, 5},
                                           BackwardCase{{1, 2, 100, 16, 24, 32}, 1.0f, 16}),
                         [](const ::testing::TestParamInfo<BackwardCase>& i) {
                           const GatedDeltaDims& d = i.param.d;
                           return "T" + std::to_string(d.T) + "Dk" + std::to_string(d.Dk) + "Dv" +
                                  std::to_string(d.Dv) + "C" + std::to_string(d.C) + "Docs" +
                                  std::to_string(i.param.every);
                         });

}  // namespace
}  // namespace mt
