// optim_bf16_state_test.cpp — optimizer moments held in bf16 (optim.state_precision,
// docs/optimizers.md):
//  - stochastic rounding: bf16 values pass unchanged, every other value
//    rounds up for exactly the share of the 2^16 dither values its low bits
//    cover (so the mean over them is the value), NaN and infinity survive;
//  - the dither: both 16-bit halves uniform, a function of key and index;
//  - the kernels: the stored moments are the fp32 kernel's new moments
//    rounded with the element's dither bits, the result does not depend on
//    how the range is cut, and the Hyperball direction is computed from the
//    stored moments in both of its passes;
//  - Adam's second moment at beta2 = 0.999 decays as in fp32 (round to
//    nearest would hold it still);
//  - the optimizer sharded over two ranks stores what one process stores,
//    bit for bit, and allocates half the bytes of fp32 moments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/bf16.h"
#include "core/rng.h"
#include "kernels/cpu/adamw.h"
#include "kernels/cpu/muon.h"
#include "optim/optimizer.h"
#include "support/random.h"

namespace mt {
namespace {

using testing::randn;

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(StochasticRounding, RoundsUpForTheShareOfDitherValuesTheLowBitsCover) {
  std::vector<float> xs = randn(200, 3.0f, 11);
  for (float f : {1.0f, -2.5f, 0.0f, -0.0f, 1e-30f, 3.0e38f, 1.00390625f /* 1 + 2^-8: bf16 */})
    xs.push_back(f);
  for (float x : xs) {
    const uint32_t u = bits_of(x), low = u & 0xffffu;
    const uint16_t down = uint16_t(u >> 16);
    int64_t up = 0;
    for (uint32_t r = 0; r < (1u << 16); ++r) {
      const uint16_t got = f32_to_bf16_stochastic(x, r | 0xabcd0000u).bits;  // the high half is ignored
      ASSERT_TRUE(got == down || got == uint16_t(down + 1)) << x << " r " << r;
      up += got != down;
    }
    // Up for exactly `low` of the 2^16 values: the mean is x itself.
    EXPECT_EQ(up, int64_t(low)) << x;
  }
  const float nan = from_bits(0x7f800001u), inf = from_bits(0x7f800000u);
  for (uint32_t r : {0u, 0xffffu, 0x8000u}) {
    EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16_stochastic(nan, r)))) << r;
    EXPECT_EQ(bf16_to_f32(f32_to_bf16_stochastic(inf, r)), inf) << r;
    EXPECT_EQ(bf16_to_f32(f32_to_bf16_stochastic(-inf, r)), -inf) << r;
  }
}

TEST(DitherBits, BothHalvesAreUniformAndDependOnKeyAndIndex) {
  constexpr int64_t n = 1 << 20;
  int64_t lo_bins[16] = {}, hi_bins[16] = {};
  int64_t same_key = 0, same_far = 0;
  const uint32_t k1 = dither_key(1), k2 = dither_key(2);
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t b = dither_bits(k1, uint64_t(i));
    ++lo_bins[(b >> 12) & 15];
    ++hi_bins[b >> 28];
    same_key += b == dither_bits(k2, uint64_t(i));
    same_far += b == dither_bits(k1, uint64_t(i) + (uint64_t(1) << 32));
  }
  // Binomial(2^20, 1/16): sd ~ 248; 2% of the mean is ~5 sd.
  for (int b = 0; b < 16; ++b) {
    EXPECT_NEAR(double(lo_bins[b]), n / 16.0, 0.02 * n / 16.0) << "low half, bin " << b;
    EXPECT_NEAR(double(hi_bins[b]), n / 16.0, 0.02 * n / 16.0) << "high half, bin " << b;
  }
  EXPECT_LT(same_key, 16) << "two steps' dithers coincide";
  EXPECT_LT(same_far, 16) << "indices 2^32 apart share their bits";
  EXPECT_NE(k1, k2);
}

std::vector<bf16> to_bf16(const std::vector<float>& x) {
  std::vector<bf16> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = f32_to_bf16(x[i]);
  return out;
}
std::vector<float> widen(const std::vector<bf16>& x) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = bf16_to_f32(x[i]);
  return out;
}

// Moments as a step left them: m around 0, v positive; both already bf16.
struct State {
  std::vector<bf16> m, v;
  explicit State(int64_t n) {
    m = to_bf16(randn(n, 0.01f, 21));
    std::vector<float> v2 = randn(n, 1e-4f, 22);
    for (float& x : v2) x = x * x + 1e-9f;
    v = to_bf16(v2);
  }
};

TEST(Bf16StateKernels, AdamWStoresTheFp32MomentsRoundedWithTheElementsBits) {
  constexpr int64_t n = 4099;
  constexpr uint64_t first = 123457;  // the range's first layout element
  const State s(n);
  const std::vector<float> g = randn(n, 0.02f, 23), p0 = randn(n, 0.1f, 24);
  const AdamWParams a{3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.7f, 9};
  const StateDither d{dither_key(9), first};

  // The fp32 kernel from the same (widened) state gives the unrounded moments.
  std::vector<float> pf = p0, mf = widen(s.m), vf = widen(s.v);
  adamw_update(pf.data(), mf.data(), vf.data(), g.data(), n, a);

  std::vector<float> p = p0;
  std::vector<bf16> m = s.m, v = s.v;
  adamw_update(p.data(), m.data(), v.data(), g.data(), n, a, d);
  int64_t moved = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t r = dither_bits(d.key, first + uint64_t(i));
    ASSERT_EQ(m[size_t(i)].bits, f32_to_bf16_stochastic(mf[size_t(i)], r).bits) << i;
    ASSERT_EQ(v[size_t(i)].bits, f32_to_bf16_stochastic(vf[size_t(i)], r >> 16).bits) << i;
    // The step uses the rounded moments: within a bf16 rounding of the fp32 step.
    const double step = std::fabs(double(pf[size_t(i)]) - double(p0[size_t(i)]) * (1.0 - 3e-3 * 0.1));
    ASSERT_NEAR(p[size_t(i)], pf[size_t(i)], 0.02 * step + 1e-9) << i;
    moved += p[size_t(i)] != pf[size_t(i)];
  }
  EXPECT_GT(moved, n / 4) << "the step did not use the stored (rounded) moments";

  // Cut anywhere, the same bits: the dither follows the layout index.
  for (int64_t cut : {int64_t(1), int64_t(17), int64_t(2048), n - 1}) {
    std::vector<float> q = p0;
    std::vector<bf16> m2 = s.m, v2 = s.v;
    adamw_update(q.data(), m2.data(), v2.data(), g.data(), cut, a, d);
    adamw_update(q.data() + cut, m2.data() + cut, v2.data() + cut, g.data() + cut, n - cut, a,
                 StateDither{d.key, first + uint64_t(cut)});
    ASSERT_EQ(0, std::memcmp(q.data(), p.data(), sizeof(float) * n)) << cut;
    ASSERT_EQ(0, std::memcmp(m2.data(), m.data(), sizeof(bf16) * n)) << cut;
    ASSERT_EQ(0, std::memcmp(v2.data(), v.data(), sizeof(bf16) * n)) << cut;
  }
}

TEST(Bf16StateKernels, MuonMomentumAndTheHyperballDirectionUseTheStoredState) {
  constexpr int64_t n = 1031;
  const State s(n);
  const std::vector<float> g = randn(n, 0.02f, 25);
  const StateDither d{dither_key(4), 77};
  for (Nesterov nesterov : {Nesterov::kNo, Nesterov::kYes}) {
    std::vector<float> bf = widen(s.m), uf(n), u(n);
    muon_momentum(bf.data(), uf.data(), g.data(), n, 0.95f, 0.5f, nesterov);
    std::vector<bf16> b = s.m;
    muon_momentum(b.data(), u.data(), g.data(), n, 0.95f, 0.5f, nesterov, d);
    for (int64_t i = 0; i < n; ++i) {
      const bf16 want = f32_to_bf16_stochastic(bf[size_t(i)], dither_bits(d.key, d.first + uint64_t(i)));
      ASSERT_EQ(b[size_t(i)].bits, want.bits) << i;
      const float gi = 0.05f * (g[size_t(i)] * 0.5f);
      const float stored = bf16_to_f32(b[size_t(i)]);
      // Up to the compiler's fused multiply-add: 1e-6 of the terms, where the
      // unrounded momentum would be off by ~2^-9 of them.
      ASSERT_NEAR(u[size_t(i)], nesterov == Nesterov::kYes ? gi + 0.95f * stored : stored,
                  1e-6 * (std::fabs(gi) + std::fabs(stored)))
          << i;
    }
  }
  // Hyperball-AdamW: sum(u^2) of the first pass is that of the u the second pass applies.
  const AdamDirParams a{0.9f, 0.95f, 1e-8f, 1.0f, 3};
  std::vector<bf16> m = s.m, v = s.v;
  const double uu = adam_direction(m.data(), v.data(), g.data(), n, a, d);
  std::vector<float> x(n, 0.0f);
  adam_direction_axpy(x.data(), m.data(), v.data(), n, a, -1.0f);  // x = u
  double again = 0;
  for (float xi : x) again += double(xi) * double(xi);
  // (summed in another order here: unrounded moments would differ by ~1e-3)
  EXPECT_NEAR(uu, again, 1e-9 * uu);
}

// v = 1, then zero gradients for 1000 steps at beta2 = 0.999: 0.999 v rounds
// to nearest back to v (an ulp at 1 is 2^-7), so round-to-nearest state never
// moves; stochastic rounding decays to 0.999^1000 = 0.368 on average.
TEST(Bf16StateKernels, TheSecondMomentDecaysWhereRoundToNearestWouldFreezeIt) {
  ASSERT_EQ(f32_to_bf16(0.999f).bits, f32_to_bf16(1.0f).bits);
  constexpr int64_t n = 4096;
  std::vector<float> p(n, 0.0f);
  const std::vector<float> g(n, 0.0f);
  std::vector<bf16> m(n, f32_to_bf16(0.0f)), v(n, f32_to_bf16(1.0f));
  for (int64_t step = 1; step <= 1000; ++step)
    adamw_update(p.data(), m.data(), v.data(), g.data(), n, AdamWParams{0.0f, 0.9f, 0.999f, 1e-8f, 0.0f, 1.0f, step},
                 StateDither{dither_key(step), 0});
  double mean = 0;
  for (bf16 x : v) mean += double(bf16_to_f32(x));
  mean /= n;
  EXPECT_NEAR(mean, std::pow(0.999, 1000), 0.02 * std::pow(0.999, 1000));
}

// ---------------------------------------------------------------- the optimizer

// A world of `size` for AdamW alone, which needs no collective.
class NoCollectives final : public Comm {
 public:
  NoCollectives(int rank, int size) : Comm(std::make_shared<CommStats>()), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::unique_ptr<Comm> split(int, int) override { return unexpected("split"); }
  void barrier(const char* what) override { unexpected(what); }
  void bcast(void*, int64_t, int) override { unexpected("bcast"); }
  std::unique_ptr<Request> iallgatherv(const void*, int64_t, void*, const int64_t*, const int64_t*, DType,
                                       CommKind k) override {
    return unexpected(comm_kind_name(k));
  }
  std::unique_ptr<Request> ialltoallv(const void*, const int64_t*, const int64_t*, void*, const int64_t*,
                                      const int64_t*, DType, CommKind k) override {
    return unexpected(comm_kind_name(k));
  }
  void wait(Request*, const char*) override {}

 private:
  static std::nullptr_t unexpected(const char* what) {
    ADD_FAILURE() << "unexpected collective: " << what;
    return nullptr;
  }
  int rank_, size_;
};

ParamLayout wide_layout() {  // several optimizer segments (2^16 elements) per matrix
  ParamLayout L;
  L.add("embed", {300, 512}, ParamKind::kEmbedding);
  L.add("layers.0.attn_norm", {512}, ParamKind::kNorm, 0);
  L.add("layers.0.mlp.w1", {384, 512}, ParamKind::kMatrix, 0);
  L.add("final_norm", {512}, ParamKind::kNorm);
  return L;
}

TEST(Bf16StateOptimizer, TwoShardsStoreWhatOneProcessStoresBitForBit) {
  const ParamLayout L = wide_layout();
  const int64_t T = L.total();
  // Cuts inside the embedding and inside w1, off every segment boundary.
  const std::vector<std::vector<Optimizer::Range>> ranks = {{{0, 100003, 0}, {160000, 200001, 100003}},
                                                             {{100003, 160000, 0}, {200001, T, 59997}}};
  AdamWConfig a;
  OptimizerConfig c;
  c.state_precision = StatePrecision::kBf16;
  NoCollectives one_comm(0, 1);
  Optimizer one(L, a, c, 1e-3, one_comm);
  std::vector<float> ref = randn(T, 0.1f, 31);
  const std::vector<float> start = ref;
  std::vector<std::unique_ptr<NoCollectives>> comms;
  std::vector<std::unique_ptr<Optimizer>> shard;
  std::vector<std::vector<float>> p(2);
  for (int r = 0; r < 2; ++r) {
    comms.push_back(std::make_unique<NoCollectives>(r, 2));
    shard.push_back(std::make_unique<Optimizer>(L, a, c, 1e-3, ranks, *comms.back()));
    p[size_t(r)].resize(size_t(shard.back()->local_size()));
    for (const Optimizer::Range& rg : ranks[size_t(r)])
      std::copy(start.begin() + rg.lo, start.begin() + rg.hi, p[size_t(r)].begin() + rg.local);
  }
  for (int64_t step = 1; step <= 3; ++step) {
    const std::vector<float> g = randn(T, 1.0f, 32, uint64_t(step));
    const double norm = std::sqrt(one.local_sum_squares(g.data()));
    one.update(ref.data(), g.data(), 1e-3, step, norm);
    for (int r = 0; r < 2; ++r) {
      std::vector<float> gl(p[size_t(r)].size());
      for (const Optimizer::Range& rg : ranks[size_t(r)])
        std::copy(g.begin() + rg.lo, g.begin() + rg.hi, gl.begin() + rg.local);
      shard[size_t(r)]->update(p[size_t(r)].data(), gl.data(), 1e-3, step, norm);
    }
  }
  const std::vector<float> m1 = one.m_local(), v1 = one.v_local();
  for (int r = 0; r < 2; ++r) {
    const std::vector<float> m = shard[size_t(r)]->m_local(), v = shard[size_t(r)]->v_local();
    for (const Optimizer::Range& rg : ranks[size_t(r)]) {
      const size_t n = size_t(rg.hi - rg.lo) * sizeof(float);
      EXPECT_EQ(0, std::memcmp(p[size_t(r)].data() + rg.local, ref.data() + rg.lo, n)) << "rank " << r;
      EXPECT_EQ(0, std::memcmp(m.data() + rg.local, m1.data() + rg.lo, n)) << "rank " << r;
      EXPECT_EQ(0, std::memcmp(v.data() + rg.local, v1.data() + rg.lo, n)) << "rank " << r;
    }
  }
  // Every stored moment is a bf16 value, and they moved.
  int64_t nonzero = 0;
  for (float x : m1) {
    ASSERT_EQ(bits_of(x) & 0xffffu, 0u);
    nonzero += x != 0.0f;
  }
  EXPECT_GT(nonzero, T * 9 / 10);

  OptimizerConfig f = c;
  f.state_precision = StatePrecision::kFp32;
  const Optimizer fp32(L, a, f, 1e-3, one_comm);
  EXPECT_EQ(2 * one.state_bytes(), fp32.state_bytes());
  EXPECT_EQ(one.state_bytes(), int64_t(sizeof(bf16)) * 2 * T);
}

// The checkpoint slots of bf16 state point into it (and carry no fp32 pointer).
TEST(Bf16StateOptimizer, CheckpointSlotsAreTheBf16State) {
  const ParamLayout L = wide_layout();
  OptimizerConfig c;
  c.state_precision = StatePrecision::kBf16;
  NoCollectives comm(0, 1);
  Optimizer opt(L, AdamWConfig{}, c, 1e-3, comm);
  for (size_t e = 0; e < L.entries().size(); ++e) {
    const auto slots = opt.state_at(int64_t(e), L.entries()[e].offset);
    ASSERT_EQ(slots.size(), 2u);
    for (const Optimizer::StateSlot& s : slots) {
      EXPECT_EQ(s.data, nullptr) << s.prefix;
      EXPECT_NE(s.data_bf16, nullptr) << s.prefix;
    }
  }
}

}  // namespace
}  // namespace mt
