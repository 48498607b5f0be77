// grad_ledger_test.cpp — first writes of weight gradients (model/grad_ledger.h):
// the ledger answers beta 0 only for tensors nothing touched since they were
// cleared; a product told beta 0 writes the gradient without reading what was
// there (garbage below, so a read would show); and a whole model's backward
// with the ledger gives the bits of the one without it while every matrix's
// gradient is first written by a product.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/grouped_swiglu.h"
#include "model/grad_ledger.h"
#include "model/param_layout.h"
#include "model/parallel_hooks.h"
#include "model/transformer.h"
#include "model/weights.h"
#include "support/random.h"
#include "train/run_config.h"

namespace mt {
namespace {

using testing::randn;

ParamLayout three_tensors() {
  ParamLayout L;
  L.add("a", {4, 8}, ParamKind::kMatrix);   // [0, 32)
  L.add("b", {8}, ParamKind::kNorm);        // [32, 40)
  L.add("c", {2, 10}, ParamKind::kMatrix);  // [40, 60)
  return L;
}

TEST(GradLedger, FirstWriteOnlyUntilTouchedAndOnlyAfterAClear) {
  const ParamLayout L = three_tensors();
  GradLedger g(L);
  EXPECT_EQ(g.tensors(), 3);
  EXPECT_EQ(g.first_write_beta(0, 32), 1.0f) << "nothing is known to be zero before the first clear";
  g.clear_all();
  EXPECT_EQ(g.written(), 0);
  EXPECT_EQ(g.first_write_beta(0, 32), 0.0f);
  EXPECT_EQ(g.first_write_beta(0, 32), 1.0f) << "the second product adds to the first";
  g.touch(45);  // an addition into c
  EXPECT_EQ(g.first_write_beta(40, 20), 1.0f);
  g.clear_all();
  // A range over two tensors is first only if both are; either way both are then written.
  g.touch(33);
  EXPECT_EQ(g.first_write_beta(20, 20), 1.0f);
  EXPECT_EQ(g.first_write_beta(0, 8), 1.0f);
  EXPECT_EQ(g.first_write_beta(40, 1), 0.0f) << "a part of an untouched tensor";
  EXPECT_EQ(g.written(), 3);
  // A unit buffer cleared again, or loaded with a running sum.
  g.clear(32, 60);
  EXPECT_EQ(g.written(), 1);
  EXPECT_EQ(g.first_write_beta(32, 28), 0.0f);
  g.clear(0, 60);
  g.mark_written(32, 40);
  EXPECT_EQ(g.first_write_beta(32, 8), 1.0f);
  EXPECT_EQ(g.first_write_beta(0, 32), 0.0f);
}

TEST(GradLedger, SpansTouchOnAccessAndClaimWholeRanges) {
  const ParamLayout L = three_tensors();
  GradLedger g(L);
  g.clear_all();
  std::vector<float> params(60), grads(60);
  const ParamSpan sp{params.data(), grads.data(), 0, &g};
  float* b = sp.grad(32);  // a norm's gradient, added into
  EXPECT_EQ(b, grads.data() + 32);
  const WeightGrad a = sp.grad_whole(0, 32), bc = sp.grad_whole(32, 28);
  EXPECT_EQ(a.data, grads.data());
  EXPECT_EQ(a.beta, 0.0f);
  EXPECT_EQ(bc.beta, 1.0f) << "b was handed out for adding";
  const ParamSpan plain{params.data(), grads.data(), 0};
  EXPECT_EQ(plain.grad_whole(40, 20).beta, 1.0f) << "no ledger: always add";
}

// dW of linear_backward over garbage with beta 0 equals dW accumulated onto zeros, bit for bit.
void expect_first_write_of_linear_backward(int64_t M, int64_t N, int64_t K, MatmulPrecision p) {
  const std::vector<float> x = randn(M * K, 1.0f, 1), dy = randn(M * N, 1.0f, 2), W = randn(N * K, 0.2f, 3);
  std::vector<float> dx1(M * K), dx2(M * K), added(N * K, 0.0f);
  std::vector<float> written(N * K, std::numeric_limits<float>::quiet_NaN());
  linear_backward(dx1.data(), added.data(), dy.data(), x.data(), W.data(), M, N, K, 0.0f, p);
  linear_backward(dx2.data(), WeightGrad(written.data(), 0.0f), dy.data(), x.data(), W.data(), M, N, K, 0.0f, p);
  EXPECT_EQ(0, std::memcmp(added.data(), written.data(), added.size() * sizeof(float)))
      << M << "x" << N << "x" << K << (p == MatmulPrecision::kBf16 ? " bf16" : " fp32");
  std::vector<float> router(N * K, std::numeric_limits<float>::quiet_NaN());
  linear_backward_weight(WeightGrad(router.data(), 0.0f), dy.data(), x.data(), M, N, K, p);
  EXPECT_EQ(0, std::memcmp(added.data(), router.data(), added.size() * sizeof(float)));
}

TEST(FirstWrite, LinearBackwardWritesWithoutReading) {
  for (MatmulPrecision p : {MatmulPrecision::kFp32, MatmulPrecision::kBf16}) {
    expect_first_write_of_linear_backward(96, 80, 64, p);   // oneDNN
    expect_first_write_of_linear_backward(300, 16, 64, p);  // fp32: the skinny kernel (the router's shape)
  }
}

// The grouped experts: garbage under every expert with rows, beta 0, gives
// the gradients accumulated onto zeros; an expert without rows keeps what
// its buffer held (the ledger's zeros in a step). One thread runs whole
// experts, two run row tiles.
TEST(FirstWrite, GroupedExpertsWriteWithoutReading) {
  const int saved = omp_get_max_threads();
  const int64_t F = 40, Din = 48;
  const std::vector<int64_t> begin{0, 0, 64, 160, 176, 448};
  const int64_t E = int64_t(begin.size()) - 1, R = begin.back();
  const std::vector<float> x = randn(R * Din, 1.0f, 11), dy = randn(R * Din, 1.0f, 12),
                           w13 = randn(E * 2 * F * Din, 0.15f, 13), w2 = randn(E * Din * F, 0.15f, 14);
  for (MatmulPrecision p : {MatmulPrecision::kFp32, MatmulPrecision::kBf16})
    for (int threads : {1, 2}) {
      omp_set_num_threads(threads);
      std::vector<float> y(R * Din), h13(R * 2 * F), z(R * F), dh13(R * 2 * F), dx(R * Din);
      std::vector<const float*> w13p, w2p;
      for (int64_t i = 0; i < E; ++i)
        w13p.push_back(w13.data() + i * 2 * F * Din), w2p.push_back(w2.data() + i * Din * F);
      const ExpertGroup g{E, begin.data(), F, Din, w13p.data(), w2p.data()};
      grouped_swiglu_forward(y.data(), h13.data(), z.data(), x.data(), g, p);
      std::vector<float> add13(E * 2 * F * Din, 0.0f), add2(E * Din * F, 0.0f);
      std::vector<float> put13(add13.size(), std::numeric_limits<float>::quiet_NaN()), put2(add2.size(), -3.0f);
      std::vector<WeightGrad> a13, a2, p13, p2;
      for (int64_t i = 0; i < E; ++i) {
        a13.push_back(add13.data() + i * 2 * F * Din), a2.push_back(add2.data() + i * Din * F);
        p13.push_back({put13.data() + i * 2 * F * Din, 0.0f}), p2.push_back({put2.data() + i * Din * F, 0.0f});
      }
      grouped_swiglu_backward(dx.data(), a13.data(), a2.data(), dh13.data(), dy.data(), x.data(), h13.data(), z.data(),
                              g, p);
      grouped_swiglu_backward(dx.data(), p13.data(), p2.data(), dh13.data(), dy.data(), x.data(), h13.data(), z.data(),
                              g, p);
      const int64_t n13 = 2 * F * Din, n2 = Din * F;  // expert 0 has no rows
      EXPECT_TRUE(std::isnan(put13[0]) && put2[n2 - 1] == -3.0f) << "an expert without rows is not written";
      EXPECT_EQ(0, std::memcmp(add13.data() + n13, put13.data() + n13, (add13.size() - n13) * sizeof(float)))
          << threads << " threads";
      EXPECT_EQ(0, std::memcmp(add2.data() + n2, put2.data() + n2, (add2.size() - n2) * sizeof(float)))
          << threads << " threads";
    }
  omp_set_num_threads(saved);
}

// A whole model: the backward with the ledger gives the gradients (and loss)
// of the backward without it, bit for bit, and every matrix's gradient (the
// tied head's included) was first written by a product, not added onto zeros.
class FirstWriteModel : public ::testing::TestWithParam<std::vector<std::string>> {};

TEST_P(FirstWriteModel, SameBitsAndEveryMatrixFirstWritten) {
  std::vector<std::string> sets{"model.n_experts=4", "model.capacity_factor=1.0"};
  for (const std::string& s : GetParam()) sets.push_back(s);
  auto cfg = load_run_config(std::string(MT_SOURCE_DIR) + "/configs/tiny-test.toml", sets);
  ASSERT_TRUE(cfg.is_ok()) << cfg.status().message();
  const ModelConfig c = cfg.value().model;
  const int64_t B = 2, T = 32;
  for (MatmulPrecision p : {MatmulPrecision::kFp32, MatmulPrecision::kBf16}) {
    Transformer m(c, B, T, p, LayerActivations::kKeep);
    const ParamLayout& L = m.layout();
    std::vector<float> params(size_t(L.total()));
    init_params(params.data(), L, c, 7);
    std::vector<int32_t> tokens(size_t(B * m.tokens_per_sequence()));
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t(testing::rand_u32(9, 0, i) % uint32_t(c.vocab_size));
    std::vector<float> plain(size_t(L.total()), 0.0f), ledgered(size_t(L.total()), 0.0f);
    FlatParams pp_plain(params.data(), plain.data());
    const ForwardStats a = m.forward_backward(pp_plain, tokens.data(), 1.0f, nullptr);
    GradLedger ledger(L);
    ledger.clear_all();
    FlatParams pp_ledger(params.data(), ledgered.data(), &ledger);
    const ForwardStats b = m.forward_backward(pp_ledger, tokens.data(), 1.0f, nullptr);
    EXPECT_EQ(a.loss, b.loss);
    EXPECT_EQ(0, std::memcmp(plain.data(), ledgered.data(), plain.size() * sizeof(float)));
    // Each matrix claimed by its products before anything added into it:
    // clearing it again and claiming it now says it was written.
    for (const ParamEntry& e : L.entries()) {
      if (e.kind == ParamKind::kNorm) continue;
      if (e.kind == ParamKind::kEmbedding && !c.tied_embeddings) continue;  // the lookup's scatter adds
      SCOPED_TRACE(e.name);
      EXPECT_EQ(ledger.first_write_beta(e.offset, e.numel), 1.0f) << "nothing wrote it";
    }
    // And the products did write first: with every gradient poisoned, the
    // claimed matrices come out right (a product that read would carry the NaN).
    std::vector<float> poisoned(size_t(L.total()), 0.0f);
    for (const ParamEntry& e : L.entries())
      if (e.kind == ParamKind::kMatrix) std::fill_n(poisoned.begin() + e.offset, e.numel, std::nanf(""));
    GradLedger second(L);
    second.clear_all();
    FlatParams pp_poison(params.data(), poisoned.data(), &second);
    m.forward_backward(pp_poison, tokens.data(), 1.0f, nullptr);
    for (const ParamEntry& e : L.entries())
      if (e.kind == ParamKind::kMatrix)
        EXPECT_EQ(0, std::memcmp(plain.data() + e.offset, poisoned.data() + e.offset, size_t(e.numel) * sizeof(float)))
            << e.name << " was added into, not first written";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Variants, FirstWriteModel,
    ::testing::Values(
        std::vector<std::string>{}, std::vector<std::string>{"model.n_shared_experts=1"},
        std::vector<std::string>{"model.tied_embeddings=false", "model.n_dense_layers=1", "model.d_ff=96"},
        std::vector<std::string>{"model.d_latent=32"},
        std::vector<std::string>{"model.attention=\"mla\"", "model.kv_lora_rank=32", "model.qk_nope_head_dim=16",
                                 "model.qk_rope_head_dim=8", "model.v_head_dim=16"},
        std::vector<std::string>{"model.attention=\"mla\"", "model.kv_lora_rank=32", "model.q_lora_rank=24",
                                 "model.qk_nope_head_dim=16", "model.qk_rope_head_dim=8", "model.v_head_dim=16"},
        std::vector<std::string>{"model.layer_pattern=\"DG\"", "model.delta_heads=4", "model.delta_key_dim=16",
                                 "model.delta_value_dim=16", "model.delta_chunk=16"},
        std::vector<std::string>{"model.mtp_depth=1"}),
    [](const auto& info) { return "v" + std::to_string(info.index); });

}  // namespace
}  // namespace mt
