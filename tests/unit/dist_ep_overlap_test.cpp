// dist_ep_overlap_test.cpp — the MoE block keeps its routed-row exchanges in
// flight while it computes: between every *_start and its *_finish it does
// some work (the shared experts, the router's backward) and pokes progress;
// the split does not change the one-process arithmetic; and the EP
// dispatcher refuses an exchange posted over another or a finish with
// nothing in flight.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/threads.h"
#include "comm/comm.h"
#include "dist/expert_parallel.h"
#include "dist/mesh.h"
#include "model/moe_block.h"
#include "model/transformer.h"
#include "support/fixtures.h"

namespace mt {
namespace {

ModelConfig moe_config(int64_t shared, int64_t latent) {
  ModelConfig c = testing::tiny_moe_config();
  c.n_shared_experts = shared;
  c.d_latent = latent;
  return c;
}

// The identity dispatcher, logging each call.
class RecordingDispatcher final : public ExpertDispatcher {
 public:
  explicit RecordingDispatcher(int64_t E) : inner_(E) {}
  std::vector<std::string> log;

  void dispatch_start(int64_t l, FfnActs& a, int64_t d) override {
    note("dispatch_start", l);
    inner_.dispatch_start(l, a, d);
  }
  ExpertRows dispatch_finish(int64_t l, FfnActs& a, int64_t d) override {
    note("dispatch_finish", l);
    return inner_.dispatch_finish(l, a, d);
  }
  void combine_start(int64_t l, FfnActs& a, int64_t d) override {
    note("combine_start", l);
    inner_.combine_start(l, a, d);
  }
  void combine_finish(int64_t l, FfnActs& a, int64_t d) override {
    note("combine_finish", l);
    inner_.combine_finish(l, a, d);
  }
  void dispatch_grad_start(int64_t l, const FfnActs& a, FfnScratch& s, int64_t d) override {
    note("dispatch_grad_start", l);
    inner_.dispatch_grad_start(l, a, s, d);
  }
  ExpertRows dispatch_grad_finish(int64_t l, const FfnActs& a, FfnScratch& s, int64_t d) override {
    note("dispatch_grad_finish", l);
    return inner_.dispatch_grad_finish(l, a, s, d);
  }
  void combine_grad_start(int64_t l, const FfnActs& a, FfnScratch& s, int64_t d) override {
    note("combine_grad_start", l);
    inner_.combine_grad_start(l, a, s, d);
  }
  void combine_grad_finish(int64_t l, const FfnActs& a, FfnScratch& s, int64_t d) override {
    note("combine_grad_finish", l);
    inner_.combine_grad_finish(l, a, s, d);
  }
  void progress() override { log.push_back("progress"); }

 private:
  void note(const char* what, int64_t layer) { log.push_back(std::string(what) + " " + std::to_string(layer)); }
  IdentityDispatcher inner_;
};

// The whole flat buffers, with the recording dispatcher.
class RecordingProvider final : public ParamProvider {
 public:
  RecordingProvider(const float* p, float* g, RecordingDispatcher& d) : span_{p, g, 0}, d_(d) {}
  RootParams acquire_root(Grads) override { return {span_, span_}; }
  void release_root() override {}
  LayerParams acquire_layer(int64_t, Pass) override { return {span_, span_}; }
  void release_layer(int64_t, Pass) override {}
  ExpertDispatcher* dispatcher() override { return &d_; }

 private:
  ParamSpan span_;
  RecordingDispatcher& d_;
};

std::vector<int32_t> tokens(const ModelConfig& c, int64_t n, uint64_t seed) {
  std::vector<float> u(n);
  fill_normal(u.data(), n, 1.0f, seed, 3);
  std::vector<int32_t> t(n);
  for (int64_t i = 0; i < n; ++i) t[i] = int32_t(std::abs(u[i]) * 1000) % int32_t(c.vocab_size);
  return t;
}

// What one MoE layer's exchanges look like: with shared experts every
// exchange has work (and a progress poke) between its start and its
// finish; without them the forward exchanges have none, the gradient
// combine still overlaps the router's backward.
std::vector<std::string> expected_layer_log(int64_t layer, int64_t shared, bool forward) {
  const std::string l = " " + std::to_string(layer);
  std::vector<std::string> v;
  auto exchange = [&](const std::string& name, int64_t pokes) {
    v.push_back(name + "_start" + l);
    for (int64_t i = 0; i < pokes; ++i) v.push_back("progress");
    v.push_back(name + "_finish" + l);
  };
  if (forward) {
    exchange("dispatch", shared);
    exchange("combine", shared);
  } else {
    exchange("dispatch_grad", shared);
    exchange("combine_grad", 1);
  }
  return v;
}

TEST(EpOverlap, EveryExchangeHasWorkBetweenItsStartAndFinishAndTheResultIsTheFlatPaths) {
  set_num_threads(1);
  const int64_t B = 2, T = 8;
  for (int64_t shared : {0, 1, 2}) {
    for (int64_t latent : {0, 8}) {
      const ModelConfig c = moe_config(shared, latent);
      SCOPED_TRACE("shared " + std::to_string(shared) + ", latent " + std::to_string(latent));
      Transformer model(c, B, T, MatmulPrecision::kFp32);
      const ParamLayout& L = model.layout();
      std::vector<float> params(L.total());
      init_params(params.data(), L, c, 5);
      const std::vector<int32_t> tok = tokens(c, B * (T + 1), 11);

      std::vector<float> flat_grads(L.total(), 0.0f);
      const ForwardStats flat = model.forward_backward(params.data(), flat_grads.data(), tok.data(), 0.5f, nullptr);

      RecordingDispatcher rec(c.n_experts);
      std::vector<float> grads(L.total(), 0.0f);
      RecordingProvider with_grads(params.data(), grads.data(), rec);
      const ForwardStats st = model.forward_backward(with_grads, tok.data(), 0.5f, nullptr);
      EXPECT_EQ(st.loss, flat.loss);
      EXPECT_EQ(0, std::memcmp(grads.data(), flat_grads.data(), grads.size() * sizeof(float)));

      std::vector<std::string> want;
      for (int64_t l = 1; l < c.n_layers; ++l) {
        const auto f = expected_layer_log(l, shared, true);
        want.insert(want.end(), f.begin(), f.end());
      }
      for (int64_t l = c.n_layers - 1; l >= 1; --l) {
        const auto b = expected_layer_log(l, shared, false);
        want.insert(want.end(), b.begin(), b.end());
      }
      EXPECT_EQ(rec.log, want);
    }
  }
}

TEST(EpOverlapDeathTest, AnExchangePostedOverAnotherOrFinishedUnpostedIsRefused) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const ModelConfig c = moe_config(1, 0);
  const int64_t layer = 1, Din = c.expert_in_dim();
  // Runs `calls` on a one-rank EP dispatcher (B = 2, T = 8).
  auto with_dispatcher = [&](auto calls) {
    LocalComm world;
    Mesh mesh(world, MeshShape{1, 1});
    EpDispatcher ep(mesh.ep(), c, 2, 8);
    FfnActs a;
    FfnScratch s;
    calls(ep, a, s);
  };
  EXPECT_DEATH(with_dispatcher([&](EpDispatcher& ep, FfnActs& a, FfnScratch&) { ep.combine_finish(layer, a, Din); }),
               "waiting for 'all-to-all \\(expert combine\\)' with nothing in flight");
  EXPECT_DEATH(with_dispatcher([&](EpDispatcher& ep, FfnActs& a, FfnScratch&) {
                 ep.combine_start(layer, a, Din);
                 ep.combine_start(layer, a, Din);
               }),
               "'all-to-all \\(expert combine\\)' posted while 'all-to-all \\(expert combine\\)' is in flight");
  EXPECT_DEATH(with_dispatcher([&](EpDispatcher& ep, FfnActs& a, FfnScratch& s) {
                 ep.combine_start(layer, a, Din);
                 ep.combine_grad_finish(layer, a, s, Din);
               }),
               "waiting for 'all-to-all \\(expert gradient combine\\)' while 'all-to-all \\(expert combine\\)' is "
               "in flight");
}

}  // namespace
}  // namespace mt
