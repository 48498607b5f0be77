// kernels_document_mask_test.cpp — document masking (train.document_mask) in
// the kernels: a row packed with several documents gives, document by
// document, what the same kernel gives on that document alone (the unpacked
// per-document reference), forward and backward, for both attention kernels
// (fp32 and bf16, GQA and MLA head widths, global and windowed) and the
// gated-delta rule; and the attention work counted is the work the
// documents allow.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/gated_delta.h"
#include "support/attention_kernels.h"
#include "support/random.h"

namespace mt {
namespace {

using testing::randn;
using Kernel = testing::AttentionKernelKind;
constexpr auto forward = testing::run_forward;
constexpr auto backward = testing::run_backward;

// Document starts of B rows of T tokens cut into documents of the given
// lengths (cycled; the last document of a row is cut at T).
std::vector<int32_t> doc_starts(int64_t B, int64_t T, const std::vector<int64_t>& lengths, int64_t phase = 0) {
  std::vector<int32_t> s(size_t(B * T));
  for (int64_t b = 0; b < B; ++b) {
    int64_t start = 0, k = b + phase, left = lengths[size_t(k % int64_t(lengths.size()))];
    for (int64_t t = 0; t < T; ++t) {
      if (left == 0) start = t, left = lengths[size_t(++k % int64_t(lengths.size()))];
      s[size_t(b * T + t)] = int32_t(start);
      --left;
    }
  }
  return s;
}

// The documents of row b: [begin, end) pairs.
std::vector<std::pair<int64_t, int64_t>> documents(const std::vector<int32_t>& starts, int64_t b, int64_t T) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t t = 0; t < T; ++t)
    if (starts[size_t(b * T + t)] == t) out.push_back({t, T});
  for (size_t i = 0; i + 1 < out.size(); ++i) out[i].second = out[i + 1].first;
  return out;
}

struct Case {
  Kernel kernel;
  int64_t H, Hkv, Dh, Dv, window;
  std::string name;
};

// Rows [t0, t1) of every head of row b of a (B, heads, T, width) tensor, as a (1, heads, t1 - t0, width) one.
std::vector<float> slice(const std::vector<float>& x, int64_t b, int64_t heads, int64_t T, int64_t width, int64_t t0,
                         int64_t t1) {
  std::vector<float> out;
  for (int64_t h = 0; h < heads; ++h) {
    const float* src = x.data() + ((b * heads + h) * T + t0) * width;
    out.insert(out.end(), src, src + (t1 - t0) * width);
  }
  return out;
}

class AttentionDocumentMask : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionDocumentMask, EachDocumentIsItsOwnSequence) {
  const Case c = GetParam();
  const int64_t B = 2, T = 150;
  // Documents of 1 token, across tile boundaries (32 and 64 queries), one
  // longer than the window, and a document that fills its row.
  const std::vector<int32_t> starts = doc_starts(B, T, {37, 1, 60, 5, 29, 80});
  AttentionDims d{B, c.H, c.Hkv, T, c.Dh, c.window, c.Dv};
  d.doc_start = starts.data();
  const int64_t Dv = d.v_dim();
  auto q = randn(B * c.H * T * c.Dh, 1.5f, 1), k = randn(B * c.Hkv * T * c.Dh, 1.5f, 2),
       v = randn(B * c.Hkv * T * Dv, 1.0f, 3), dout = randn(B * c.H * T * Dv, 1.0f, 4);
  std::vector<float> o(size_t(B * c.H * T * Dv)), lse(size_t(B * c.H * T));
  std::vector<float> dq(q.size()), dk(k.size()), dv(v.size());
  forward(c.kernel, o.data(), lse.data(), q.data(), k.data(), v.data(), d);
  backward(c.kernel, dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(), v.data(), o.data(), lse.data(),
           d);
  // fp32: the same arithmetic up to summation order over masked zeros; bf16:
  // the same roundings of q, k, v and dout, P and dS from other tile shapes.
  const double tol = c.kernel == Kernel::kMatmulBf16 ? 2e-2 : 2e-5;
  int64_t docs = 0;
  for (int64_t b = 0; b < B; ++b)
    for (auto [t0, t1] : documents(starts, b, T)) {
      ++docs;
      const int64_t n = t1 - t0;
      const AttentionDims one{1, c.H, c.Hkv, n, c.Dh, c.window, c.Dv};
      auto q1 = slice(q, b, c.H, T, c.Dh, t0, t1), k1 = slice(k, b, c.Hkv, T, c.Dh, t0, t1),
           v1 = slice(v, b, c.Hkv, T, Dv, t0, t1), do1 = slice(dout, b, c.H, T, Dv, t0, t1);
      std::vector<float> o1(size_t(c.H * n * Dv)), lse1(size_t(c.H * n)), dq1(q1.size()), dk1(k1.size()),
          dv1(v1.size());
      forward(c.kernel, o1.data(), lse1.data(), q1.data(), k1.data(), v1.data(), one);
      backward(c.kernel, dq1.data(), dk1.data(), dv1.data(), do1.data(), q1.data(), k1.data(), v1.data(), o1.data(),
               lse1.data(), one);
      auto expect = [&](const char* what, const std::vector<float>& packed, const std::vector<float>& alone,
                        int64_t heads, int64_t width) {
        const std::vector<float> got = slice(packed, b, heads, T, width, t0, t1);
        ASSERT_EQ(got.size(), alone.size());
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_NEAR(got[i], alone[i], tol * (1.0 + std::abs(alone[i])))
              << what << " row " << b << " document [" << t0 << ", " << t1 << ") element " << i;
      };
      expect("o", o, o1, c.H, Dv);
      expect("lse", lse, lse1, c.H, 1);
      expect("dq", dq, dq1, c.H, c.Dh);
      expect("dk", dk, dk1, c.Hkv, c.Dh);
      expect("dv", dv, dv1, c.Hkv, Dv);
    }
  EXPECT_GE(docs, 6);
}

TEST_P(AttentionDocumentMask, WithoutStartsPastTheFirstTokenItIsThePlainKernel) {
  const Case c = GetParam();
  const int64_t B = 2, T = 70;
  const std::vector<int32_t> zeros(size_t(B * T), 0);
  AttentionDims plain{B, c.H, c.Hkv, T, c.Dh, c.window, c.Dv}, masked = plain;
  masked.doc_start = zeros.data();
  const int64_t Dv = plain.v_dim();
  auto q = randn(B * c.H * T * c.Dh, 1.0f, 5), k = randn(B * c.Hkv * T * c.Dh, 1.0f, 6),
       v = randn(B * c.Hkv * T * Dv, 1.0f, 7);
  std::vector<float> o1(size_t(B * c.H * T * Dv)), o2(o1.size()), l1(size_t(B * c.H * T)), l2(l1.size());
  forward(c.kernel, o1.data(), l1.data(), q.data(), k.data(), v.data(), plain);
  forward(c.kernel, o2.data(), l2.data(), q.data(), k.data(), v.data(), masked);
  EXPECT_EQ(o1, o2);
  EXPECT_EQ(l1, l2);
}

std::vector<Case> cases() {
  std::vector<Case> v;
  const std::pair<Kernel, const char*> kernels[] = {
      {Kernel::kBlocked, "blocked"}, {Kernel::kMatmulFp32, "matmul_fp32"}, {Kernel::kMatmulBf16, "matmul_bf16"}};
  for (auto [k, kn] : kernels)
    for (int64_t w : {0, 24}) {
      const std::string suffix = std::string(kn) + "_w" + std::to_string(w);
      v.push_back({k, 4, 2, 16, 0, w, "gqa_" + suffix});
      v.push_back({k, 4, 4, 12, 8, w, "mla_" + suffix});  // MLA's Dqk = Dn + Dr, Dv its own
    }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Kernels, AttentionDocumentMask, ::testing::ValuesIn(cases()),
                         [](const auto& i) { return i.param.name; });

TEST(AttentionDocumentMask, KeysCountedAreTheDocumentsBands) {
  for (int64_t T : {1, 7, 64, 100})
    for (int64_t w : {0, 1, 5, 16})
      for (int64_t L : {1, 3, 16, 40, 200}) {
        double brute = 0;
        for (int64_t i = 0; i < T; ++i) {
          const int64_t start = L < T ? i / L * L : 0;
          const int64_t first = std::max(start, w > 0 ? std::max<int64_t>(0, i - w + 1) : int64_t{0});
          brute += double(i - first + 1);
        }
        EXPECT_DOUBLE_EQ(attention_mean_keys(T, w, L), brute / double(T)) << T << " " << w << " " << L;
        const std::vector<int32_t> starts = doc_starts(2, T, {L});
        EXPECT_DOUBLE_EQ(attention_keys(starts.data(), 2, T, w), 2 * brute) << T << " " << w << " " << L;
      }
  EXPECT_DOUBLE_EQ(attention_keys(nullptr, 3, 50, 0), 3 * 50 * attention_mean_keys(50, 0));
  // 4K tokens of 256-token documents: 1/16 of the causal work, about.
  EXPECT_NEAR(attention_mean_keys(4096, 0, 256) / attention_mean_keys(4096, 0), 257.0 / 4097.0, 1e-12);
}

// ---------------------------------------------------------------- gated delta

struct DeltaInputs {
  std::vector<float> q, k, v, g, beta;
};

DeltaInputs delta_inputs(const GatedDeltaDims& d, uint64_t seed) {
  const int64_t rows = d.B * d.H * d.T;
  DeltaInputs x{randn(rows * d.Dk, 0.4f, seed), randn(rows * d.Dk, 0.4f, seed + 1), randn(rows * d.Dv, 1.0f, seed + 2),
                randn(rows, 0.2f, seed + 3), randn(rows, 1.0f, seed + 4)};
  for (auto& a : x.g) a = -0.05f - std::abs(a);
  for (auto& a : x.beta) a = 1.0f / (1.0f + std::exp(-a));
  return x;
}

TEST(GatedDeltaDocumentMask, EachDocumentStartsFromAZeroState) {
  const int64_t B = 2, H = 2, T = 41, Dk = 6, Dv = 5, C = 8;
  // Starts at a chunk's first step (8), mid-chunk, back to back (1-token
  // documents) and none at all in a long stretch.
  const std::vector<int32_t> starts = doc_starts(B, T, {8, 3, 1, 1, 20, 13}, 0);
  GatedDeltaDims d{B, H, T, Dk, Dv, C, starts.data()};
  const DeltaInputs x = delta_inputs(d, 11);
  const auto dout = randn(B * H * T * Dv, 1.0f, 20);
  std::vector<float> o(dout.size()), st(size_t(B * H * gated_delta_chunks(d) * Dv * Dk));
  gated_delta_forward(o.data(), st.data(), x.q.data(), x.k.data(), x.v.data(), x.g.data(), x.beta.data(), d);
  std::vector<float> dq(x.q.size()), dk(x.k.size()), dv(x.v.size()), dg(x.g.size()), db(x.beta.size());
  gated_delta_backward(dq.data(), dk.data(), dv.data(), dg.data(), db.data(), dout.data(), x.q.data(), x.k.data(),
                       x.v.data(), x.g.data(), x.beta.data(), st.data(), d);
  // The recurrence with the same starts, one step at a time.
  {
    std::vector<float> o_rec(o.size()), state(size_t(B * H * Dv * Dk), 0.0f);
    gated_delta_recurrent(o_rec.data(), state.data(), x.q.data(), x.k.data(), x.v.data(), x.g.data(), x.beta.data(), d);
    for (size_t i = 0; i < o.size(); ++i) ASSERT_NEAR(o[i], o_rec[i], 1e-5 * (1 + std::abs(o_rec[i]))) << i;
  }
  int64_t docs = 0;
  for (int64_t b = 0; b < B; ++b)
    for (auto [t0, t1] : documents(starts, b, T)) {
      ++docs;
      const int64_t n = t1 - t0;
      const GatedDeltaDims one{1, H, n, Dk, Dv, C};
      const auto q1 = slice(x.q, b, H, T, Dk, t0, t1), k1 = slice(x.k, b, H, T, Dk, t0, t1),
                 v1 = slice(x.v, b, H, T, Dv, t0, t1), g1 = slice(x.g, b, H, T, 1, t0, t1),
                 b1 = slice(x.beta, b, H, T, 1, t0, t1), do1 = slice(dout, b, H, T, Dv, t0, t1);
      std::vector<float> o1(do1.size()), st1(size_t(H * gated_delta_chunks(one) * Dv * Dk));
      gated_delta_forward(o1.data(), st1.data(), q1.data(), k1.data(), v1.data(), g1.data(), b1.data(), one);
      std::vector<float> dq1(q1.size()), dk1(k1.size()), dv1(v1.size()), dg1(g1.size()), db1(b1.size());
      gated_delta_backward(dq1.data(), dk1.data(), dv1.data(), dg1.data(), db1.data(), do1.data(), q1.data(), k1.data(),
                           v1.data(), g1.data(), b1.data(), st1.data(), one);
      auto expect = [&](const char* what, const std::vector<float>& packed, const std::vector<float>& alone,
                        int64_t width) {
        const std::vector<float> got = slice(packed, b, H, T, width, t0, t1);
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_NEAR(got[i], alone[i], 2e-5 * (1.0 + std::abs(alone[i])))
              << what << " row " << b << " document [" << t0 << ", " << t1 << ") element " << i;
      };
      expect("o", o, o1, Dv);
      expect("dq", dq, dq1, Dk);
      expect("dk", dk, dk1, Dk);
      expect("dv", dv, dv1, Dv);
      expect("dg", dg, dg1, 1);
      expect("dbeta", db, db1, 1);
      if (t0 > 0)
        for (int64_t h = 0; h < H; ++h) EXPECT_EQ(dg[size_t((b * H + h) * T + t0)], 0.0f) << "a start's gate";
    }
  EXPECT_GE(docs, 10);
}

}  // namespace
}  // namespace mt
