// model_drops_test.cpp — capacity drops by sequence (ForwardStats::
// dropped_per_sequence), the figure the trainer turns into drops per bucket,
// under both drop policies (model.drop_policy): the counts sum to `dropped`
// and agree in every path the trainer takes (kept or recomputed layer
// activations, the FSDP + EP provider, the evaluation forward), and each
// sequence's count is what it drops when routed alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "comm/comm.h"
#include "core/threads.h"
#include "dist/expert_parallel.h"
#include "dist/fsdp.h"
#include "dist/mesh.h"
#include "dist/shard_plan.h"
#include "model/transformer.h"
#include "model/weights.h"
#include "support/fixtures.h"
#include "support/random.h"
#include "train/run_config.h"

namespace mt {
namespace {

const char* name_of(DropPolicy p) { return p == DropPolicy::kProbs ? "probs" : "position"; }

// The tiny MoE of the distributed tests (a dense first layer, then two MoE
// layers) with a capacity that drops; `group` tokens per routing group (0 =
// one sequence) and `mtp` multi-token-prediction modules, whose blocks route too.
ModelConfig drop_config(DropPolicy policy, int64_t group, int64_t mtp) {
  ModelConfig c = testing::tiny_moe_config();
  c.capacity_factor = 0.75;
  c.drop_policy = policy;
  c.routing_group = group;
  c.mtp_depth = mtp;
  return c;
}

std::vector<int32_t> make_tokens(const ModelConfig& c, int64_t B, int64_t S, uint64_t seed) {
  std::vector<int32_t> t(size_t(B * S));
  for (size_t i = 0; i < t.size(); ++i) t[i] = int32_t(testing::rand_u32(seed, 0, i) % uint32_t(c.vocab_size));
  return t;
}

int64_t sum(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t(0)); }

struct Variant {
  const char* name;
  int64_t group, mtp;
};
const Variant kVariants[] = {{"group_of_one_sequence", 0, 0}, {"group_of_two_sequences", 16, 0}, {"mtp", 0, 1}};
const DropPolicy kPolicies[] = {DropPolicy::kProbs, DropPolicy::kPosition};

TEST(DropsPerSequence, SumToTheTotalAndAgreeInEveryPath) {
  set_num_threads(1);  // tiny shapes: OpenMP spin-waits would dominate on shared cores
  const int64_t B = 4, T = 8;
  for (DropPolicy policy : kPolicies)
    for (const Variant& v : kVariants) {
      SCOPED_TRACE(std::string(name_of(policy)) + " " + v.name);
      const ModelConfig c = drop_config(policy, v.group, v.mtp);
      Transformer keep(c, B, T, MatmulPrecision::kFp32, LayerActivations::kKeep);
      Transformer recompute(c, B, T, MatmulPrecision::kFp32, LayerActivations::kRecompute);
      const ParamLayout& L = keep.layout();
      std::vector<float> params(size_t(L.total())), grads(size_t(L.total()), 0.0f);
      init_params(params.data(), L, c, 5);
      const std::vector<int32_t> tok = make_tokens(c, B, keep.tokens_per_sequence(), 11);

      const ForwardStats flat = keep.forward_backward(params.data(), grads.data(), tok.data(), 1.0f, nullptr);
      ASSERT_EQ(int64_t(flat.dropped_per_sequence.size()), B);
      EXPECT_GT(flat.dropped, 0) << "the capacity was meant to drop";
      EXPECT_EQ(sum(flat.dropped_per_sequence), flat.dropped);
      // Counted afresh by every call, not carried over from the last one.
      EXPECT_EQ(keep.forward_backward(params.data(), grads.data(), tok.data(), 1.0f, nullptr).dropped_per_sequence,
                flat.dropped_per_sequence);
      // Layer recomputation routes each layer twice and counts it once.
      const ForwardStats rec = recompute.forward_backward(params.data(), grads.data(), tok.data(), 1.0f, nullptr);
      EXPECT_EQ(rec.dropped, flat.dropped);
      EXPECT_EQ(rec.dropped_per_sequence, flat.dropped_per_sequence);
      // The evaluation forward of the training objective routes the same tokens.
      EXPECT_EQ(keep.forward(params.data(), tok.data(), nullptr, Objective::kTraining).dropped_per_sequence,
                flat.dropped_per_sequence);
      // The trainer's path: parameters through the FSDP provider, routed rows through the EP dispatcher.
      for (Transformer* m : {&keep, &recompute}) {
        LocalComm world;
        Mesh mesh(world, MeshShape{1, 1});
        ShardPlan plan(L, c, MeshShape{1, 1}, 0);
        EpDispatcher ep(mesh.ep(), c, B, T);
        FsdpProvider fsdp(mesh, plan, c.n_units(), params.data(), grads.data(), Prefetch::kNextLayer, &ep);
        const ForwardStats d = m->forward_backward(fsdp, tok.data(), 1.0f, nullptr);
        EXPECT_EQ(d.dropped, flat.dropped);
        EXPECT_EQ(d.dropped_per_sequence, flat.dropped_per_sequence);
      }
    }
}

TEST(DropsPerSequence, DropsNothingWithoutACapacity) {
  set_num_threads(1);
  const int64_t B = 3, T = 8;
  ModelConfig c = drop_config(DropPolicy::kPosition, 0, 1);
  c.capacity_factor = 0.0;
  Transformer m(c, B, T, MatmulPrecision::kFp32);
  std::vector<float> params(size_t(m.layout().total()));
  init_params(params.data(), m.layout(), c, 5);
  const ForwardStats st =
      m.forward(params.data(), make_tokens(c, B, m.tokens_per_sequence(), 11).data(), nullptr, Objective::kTraining);
  EXPECT_EQ(st.dropped, 0);
  EXPECT_EQ(st.dropped_per_sequence, std::vector<int64_t>(size_t(B), 0));
}

// With one sequence per routing group the drop decisions of a sequence do not
// depend on the others, so its count must be what the model drops when that
// sequence is the whole batch: an attribution check that shares nothing with
// the per-sequence bookkeeping.
TEST(DropsPerSequence, EachSequenceDropsWhatItDropsRoutedAlone) {
  set_num_threads(1);
  const int64_t B = 4, T = 8;
  bool uneven = false;
  for (DropPolicy policy : kPolicies)
    for (int64_t mtp : {0, 1}) {
      SCOPED_TRACE(std::string(name_of(policy)) + " mtp " + std::to_string(mtp));
      const ModelConfig c = drop_config(policy, 0, mtp);
      Transformer all(c, B, T, MatmulPrecision::kFp32), alone(c, 1, T, MatmulPrecision::kFp32);
      std::vector<float> params(size_t(all.layout().total()));
      init_params(params.data(), all.layout(), c, 5);
      const int64_t S = all.tokens_per_sequence();
      const std::vector<int32_t> tok = make_tokens(c, B, S, 13);
      const ForwardStats st = all.forward(params.data(), tok.data(), nullptr, Objective::kTraining);
      for (int64_t b = 0; b < B; ++b)
        EXPECT_EQ(st.dropped_per_sequence[size_t(b)],
                  alone.forward(params.data(), tok.data() + b * S, nullptr, Objective::kTraining).dropped)
            << "sequence " << b;
      const auto [lo, hi] = std::minmax_element(st.dropped_per_sequence.begin(), st.dropped_per_sequence.end());
      uneven |= *lo != *hi;
    }
  EXPECT_TRUE(uneven) << "every sequence dropped as many: the check could not tell sequences apart";
}

// Expert parallelism over ranks is checked under mpirun, where ranks are
// processes (tests/mpi/phased_training_mpi_test.cpp: a 2-rank EP run's drops
// per bucket equal the one-process run's, step by step). Two models in two
// threads of one process would share oneDNN's scratchpad (kernels/cpu/gemm.cpp)
// and race, which the product never does.

// model.drop_policy: "probs" by default, "position" on request, anything else
// an error that names the key.
TEST(DropPolicyKey, ParsesDefaultsAndRejectsOtherValues) {
  const std::string file = std::string(MT_SOURCE_DIR) + "/configs/tiny-test.toml";
  auto plain = load_run_config(file, {});
  ASSERT_TRUE(plain.is_ok()) << plain.status().message();
  EXPECT_EQ(plain.value().model.drop_policy, DropPolicy::kProbs);
  auto position = load_run_config(file, {"model.drop_policy=\"position\""});
  ASSERT_TRUE(position.is_ok()) << position.status().message();
  EXPECT_EQ(position.value().model.drop_policy, DropPolicy::kPosition);
  auto bad = load_run_config(file, {"model.drop_policy=\"last\""});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("model.drop_policy"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace mt
