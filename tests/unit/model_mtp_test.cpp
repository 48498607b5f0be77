// model_mtp_test.cpp — multi-token prediction (DeepSeek-V3 section 2.2, model/mtp.h): the loss-weight
// schedule, the layout's parameter count against the planner's formula, the sizing pass, the main
// next-token path left as it was, thread-count invariance of forward and backward, and the stream
// source's extra targets. Gradients: tests/gradcheck/model_gradcheck_test.cpp (mtp cases).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/threads.h"
#include "data/byte_tokenizer.h"
#include "data/plain_source.h"
#include "model/transformer.h"
#include "plan/model_stats.h"
#include "support/data_fixtures.h"
#include "support/fixtures.h"

namespace mt {
namespace {

// The shared tiny MoE as two MoE layers (global, then a window of 3), so the
// MTP module's own layer follows a windowed one.
ModelConfig tiny(int64_t depth) {
  ModelConfig c = testing::tiny_moe_config();
  c.n_layers = 2;
  c.n_dense_layers = 0;
  c.layer_pattern = "GL";
  c.window = 3;
  c.init_std = 0.2;
  c.mtp_depth = depth;
  return c;
}

TEST(Mtp, LossWeightIsPiecewiseConstantInTokensSeen) {
  ModelConfig c = tiny(1);
  c.mtp_loss_weight = 0.3;
  c.mtp_loss_weight_late = 0.1;
  EXPECT_EQ(mtp_loss_weight_at(c, 0), 0.3);
  EXPECT_EQ(mtp_loss_weight_at(c, int64_t(1) << 50), 0.3) << "switch_tokens = 0 never switches";
  c.mtp_loss_weight_switch_tokens = 10'000'000'000'000;  // DeepSeek-V3: 10T tokens
  EXPECT_EQ(mtp_loss_weight_at(c, 9'999'999'999'999), 0.3);
  EXPECT_EQ(mtp_loss_weight_at(c, 10'000'000'000'000), 0.1);
  EXPECT_EQ(mtp_loss_weight_at(c, 14'800'000'000'000), 0.1);
}

TEST(Mtp, ParameterCountIsThePlannersFormula) {
  for (int64_t depth : {1, 2, 3}) {
    for (bool tied : {true, false}) {
      ModelConfig c = tiny(depth);
      c.tied_embeddings = tied;
      c.n_dense_layers = depth == 3 ? 2 : 0;  // a dense last layer: the modules' blocks are dense too
      ParamLayout L;
      build_layout(c, L);
      const plan::ModelStats s = plan::model_stats(c, 8);
      EXPECT_EQ(L.total(), s.total) << "depth " << depth << " tied " << tied;
      ModelConfig off = c;
      off.mtp_depth = 0;
      ParamLayout L0;
      build_layout(off, L0);
      EXPECT_EQ(L.total() - L0.total(), s.mtp_params);
      // Each module is one contiguous unit after the layers, before the final norm.
      for (int64_t k = 0; k < depth; ++k) {
        const auto [lo, hi] = L.layer_range(c.n_layers + k);
        EXPECT_EQ(hi - lo, s.mtp_params / depth);
        EXPECT_LT(hi, L.find("final_norm")->offset + 1);
      }
    }
  }
}

TEST(Mtp, SizingPassCountsWhatTheModelAllocates) {
  for (int64_t depth : {0, 1, 2}) {
    Transformer m(tiny(depth), 2, 8, MatmulPrecision::kFp32);
    EXPECT_EQ(m.activation_bytes(), Transformer::activation_bytes(tiny(depth), 2, 8));
    if (depth > 0) EXPECT_GT(m.activation_bytes(), Transformer::activation_bytes(tiny(depth - 1), 2, 8));
  }
}

// Parameters of `from`'s layout copied by name into `to`'s (tensors both have).
std::vector<float> by_name(const ParamLayout& from, const std::vector<float>& p, const ParamLayout& to) {
  std::vector<float> out(size_t(to.total()), 0.0f);
  for (const ParamEntry& e : to.entries())
    if (const ParamEntry* f = from.find(e.name))
      std::copy(p.begin() + f->offset, p.begin() + f->offset + f->numel, out.begin() + e.offset);
  return out;
}

TEST(Mtp, MainNextTokenPathIsTheModelWithoutModules) {
  const int64_t B = 2, T = 8;
  Transformer with(tiny(2), B, T, MatmulPrecision::kFp32), without(tiny(0), B, T, MatmulPrecision::kFp32);
  std::vector<float> p(size_t(with.layout().total()));
  init_params(p.data(), with.layout(), tiny(2), 7);
  const std::vector<float> p0 = by_name(with.layout(), p, without.layout());
  std::vector<int32_t> rows(size_t(B * with.tokens_per_sequence())), short_rows(size_t(B * (T + 1)));
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = int32_t((i * 11 + 5) % 41);
  for (int64_t b = 0; b < B; ++b)
    std::copy(rows.begin() + b * (T + 3), rows.begin() + b * (T + 3) + T + 1, short_rows.begin() + b * (T + 1));
  const ForwardStats eval = with.forward(p.data(), short_rows.data(), nullptr);
  const ForwardStats base = without.forward(p0.data(), short_rows.data(), nullptr);
  EXPECT_EQ(eval.loss, base.loss);
  EXPECT_EQ(eval.mtp_loss, 0.0) << "evaluation runs the next-token objective only";
  std::vector<float> g(p.size(), 0.0f);
  const ForwardStats train = with.forward_backward(p.data(), g.data(), rows.data(), 1.0f, nullptr);
  EXPECT_EQ(train.loss, base.loss);
  EXPECT_GT(train.mtp_loss, 0.0);
  EXPECT_EQ(train.mtp_weight, 0.3);
  EXPECT_NEAR(train.total_loss - 0.3 * train.mtp_loss,
              base.loss + 0.01 * train.aux_loss + 0.001 * train.z_loss, 1e-12);
  EXPECT_EQ(train.expert_load.size(), 4u) << "two layers and two modules route";
  // lambda = 0: the modules get no gradient from the head; the layers get the model's own gradient
  // (router losses of the modules aside, so compare a dense model).
  ModelConfig dense2 = tiny(2), dense0 = tiny(0);
  dense2.n_experts = dense0.n_experts = 0;
  Transformer d2(dense2, B, T, MatmulPrecision::kFp32), d0(dense0, B, T, MatmulPrecision::kFp32);
  std::vector<float> q(size_t(d2.layout().total()));
  init_params(q.data(), d2.layout(), dense2, 3);
  const std::vector<float> q0 = by_name(d2.layout(), q, d0.layout());
  std::vector<float> g2(q.size(), 0.0f), g0(q0.size(), 0.0f);
  d2.set_mtp_loss_weight(0.0);
  d2.forward_backward(q.data(), g2.data(), rows.data(), 1.0f, nullptr);
  d0.forward_backward(q0.data(), g0.data(), short_rows.data(), 1.0f, nullptr);
  EXPECT_EQ(by_name(d2.layout(), g2, d0.layout()), g0);
  const ParamEntry* proj = d2.layout().find("mtp.1.proj");
  ASSERT_NE(proj, nullptr);
  for (int64_t i = 0; i < proj->numel; ++i) ASSERT_EQ(g2[size_t(proj->offset + i)], 0.0f);
}

TEST(Mtp, ThreadCountDoesNotChangeForwardOrBackward) {
  const int64_t B = 2, T = 16;
  ModelConfig c = tiny(2);
  Transformer m(c, B, T, MatmulPrecision::kFp32);
  std::vector<float> p(size_t(m.layout().total()));
  init_params(p.data(), m.layout(), c, 11);
  std::vector<int32_t> rows(size_t(B * m.tokens_per_sequence()));
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = int32_t((i * 13 + 1) % 41);
  auto run = [&](int threads, std::vector<float>& g) {
    set_num_threads(threads);
    g.assign(p.size(), 0.0f);
    return m.forward_backward(p.data(), g.data(), rows.data(), 1.0f, nullptr);
  };
  std::vector<float> g1, g2;
  const ForwardStats s1 = run(1, g1), s2 = run(2, g2);
  set_num_threads(0);
  // Bitwise apart from oneDNN's GEMM (tests/e2e/determinism_test.cpp); the MTP module adds only
  // row-parallel copies and the kernels checked in kernels_threads_test.
  EXPECT_NEAR(s1.mtp_loss, s2.mtp_loss, 1e-6 * s1.mtp_loss);
  EXPECT_NEAR(s1.loss, s2.loss, 1e-6 * s1.loss);
  double worst = 0.0, scale = 0.0;
  for (size_t i = 0; i < g1.size(); ++i) {
    worst = std::max(worst, double(std::abs(g1[i] - g2[i])));
    scale = std::max(scale, double(std::abs(g1[i])));
  }
  EXPECT_LE(worst, 1e-5 * scale);
  if (std::memcmp(g1.data(), g2.data(), g1.size() * sizeof(float)) != 0)
    std::cout << "[mtp] 1 and 2 threads differ by at most " << worst << " (scale " << scale << "): GEMM\n";
}

TEST(Mtp, PlainSourceExtraTargetsContinueTheStream) {
  testdata::TempDir dir;
  std::string text;
  uint32_t x = 12345;  // pseudo-random letters: no two windows of the stream are alike
  for (int i = 0; i < 1200; ++i) text += char('a' + (x = x * 1664525u + 1013904223u) % 26);
  const std::string path = dir.path() + "/a.txt";
  std::ofstream(path) << text;
  std::vector<int32_t> stream;
  ByteTokenizer::append_document(stream, text);
  PlainSourceOptions o;
  o.path = path;
  o.vocab_size = 300;
  o.seq_len = 16;
  o.seed = 5;
  auto src = PlainSource::open(o);
  ASSERT_TRUE(src.is_ok()) << src.status().message();
  const int64_t T = 16, ahead = 2, n = int64_t(stream.size()), windows = (n - 1) / T;
  int wrapped = 0;
  for (int64_t i = 0; i < windows; ++i) {
    std::vector<int32_t> a(T + 1), b(T + 1 + ahead);
    src.value()->sequence(i, T, a.data());
    src.value()->sequence(i, T, ahead, b.data());
    ASSERT_TRUE(std::equal(a.begin(), a.end(), b.begin())) << i;
    int64_t w = -1;  // which window
    for (int64_t c = 0; c < windows && w < 0; ++c)
      if (std::equal(a.begin(), a.end(), stream.begin() + c * T)) w = c;
    ASSERT_GE(w, 0) << i;
    for (int64_t j = 1; j <= ahead; ++j) EXPECT_EQ(b[size_t(T + j)], stream[size_t((w * T + T + j) % n)]) << i;
    wrapped += (w * T + T + ahead) >= n;
  }
  std::cout << "[mtp] " << windows << " windows, " << wrapped << " wrap to the front\n";
}

}  // namespace
}  // namespace mt
