// dist_in_one_process_test.cpp — the distributed orchestration in one process: shard plans
// give every element exactly one owner for any mesh; LocalComm collectives
// and the ordered reductions; FSDP (through LocalComm) and the EP
// dispatcher's pack/route/unpack path (one EP rank) reproduce the
// single-device forward/backward bit for bit; mesh validation messages; and
// a checkpoint written as 4 ranks' shard files reloads under 2- and 1-rank
// plans with the same tensor hash as a whole-tensor write.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>

#include "ckpt/checkpoint.h"
#include "core/rng.h"
#include "core/threads.h"
#include "comm/comm.h"
#include "dist/expert_parallel.h"
#include "dist/fsdp.h"
#include "dist/mesh.h"
#include "dist/shard_plan.h"
#include "model/transformer.h"
#include "support/fixtures.h"

namespace mt {
namespace {

ModelConfig moe_config() { return testing::tiny_moe_config(); }

std::vector<ModelConfig> configs() {
  std::vector<ModelConfig> v;
  v.push_back(moe_config());
  ModelConfig untied = moe_config();
  untied.tied_embeddings = false;
  untied.d_latent = 8;
  untied.capacity_factor = 1.0;
  v.push_back(untied);
  ModelConfig dense = moe_config();
  dense.n_experts = 0;
  v.push_back(dense);
  ModelConfig mtp = moe_config();  // two multi-token-prediction modules: two more units with experts
  mtp.mtp_depth = 2;
  v.push_back(mtp);
  return v;
}

TEST(ShardPlan, EveryElementHasExactlyOneOwner) {
  for (const ModelConfig& c : configs()) {
    ParamLayout L;
    build_layout(c, L);
    for (MeshShape shape : {MeshShape{1, 1}, MeshShape{2, 1}, MeshShape{1, 2}, MeshShape{2, 2}, MeshShape{4, 1},
                            MeshShape{1, 3}, MeshShape{2, 3}, MeshShape{4, 2}}) {
      if (c.n_experts == 0 && shape.ep > 1) continue;
      std::vector<int> owners(L.total(), 0);
      int64_t total_local = 0;
      for (int64_t r = 0; r < shape.world(); ++r) {
        ShardPlan p(L, c, shape, r);
        int64_t local = 0;
        for (const OwnedRange& o : p.owned()) {
          EXPECT_EQ(o.local, local);
          for (int64_t i = o.lo; i < o.hi; ++i) owners[i]++;
          local += o.hi - o.lo;
        }
        EXPECT_EQ(local, p.local_size());
        total_local += local;
        // This EP rank's expert units hold exactly its experts' tensors.
        for (int64_t l = 0; l < c.n_units(); ++l) {
          const ShardUnit& u = p.experts(l);
          for (const ParamEntry& e : L.entries()) {
            if (e.layer != l || e.expert < 0) continue;
            const bool mine = e.expert >= p.first_expert() && e.expert < p.first_expert() + p.expert_count();
            EXPECT_EQ(mine, e.offset >= u.lo && e.offset + e.numel <= u.hi) << e.name;
          }
        }
      }
      EXPECT_EQ(total_local, L.total());
      for (int64_t i = 0; i < L.total(); ++i)
        ASSERT_EQ(owners[i], 1) << "element " << i << " mesh " << shape.ep << "x" << shape.fsdp;
    }
  }
}

TEST(Mesh, LayoutErrorsNameTheKeys) {
  EXPECT_TRUE(resolve_mesh(4, 2, 2, 8).is_ok());
  EXPECT_EQ(resolve_mesh(4, 2, 0, 8).value().fsdp, 2);
  auto bad = resolve_mesh(4, 2, 1, 8);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("dist.ep x dist.fsdp = 2 x 1 = 2 but the job has 4 ranks"), std::string::npos)
      << bad.status().message();
  auto indiv = resolve_mesh(3, 3, 0, 8);
  ASSERT_FALSE(indiv.is_ok());
  EXPECT_NE(indiv.status().message().find("must divide model.n_experts"), std::string::npos);
  EXPECT_FALSE(resolve_mesh(2, 2, 0, 0).is_ok());
  EXPECT_EQ(mesh_coord(MeshShape{2, 2}, 3).ep_rank, 1);
  EXPECT_EQ(mesh_coord(MeshShape{2, 2}, 3).fsdp_rank, 1);
  EXPECT_EQ(mesh_coord(MeshShape{2, 2}, 2).ep_rank, 0);
}

TEST(LocalComm, CollectivesAreCopiesAndOrderedSums) {
  LocalComm c;
  std::vector<float> a = {1, 2, 3}, b(5, 0.0f);
  const int64_t counts[1] = {3}, displs[1] = {2};
  c.allgatherv(a.data(), 3, b.data(), counts, displs, DType::kF32, "test");
  EXPECT_EQ(b, (std::vector<float>{0, 0, 1, 2, 3}));
  std::vector<float> d(3, 0.0f);
  const int64_t z[1] = {0};
  c.alltoallv(a.data(), counts, z, d.data(), counts, z, DType::kF32, "test");
  EXPECT_EQ(d, a);
  double x[2] = {1.5, 2.5};
  c.allreduce_sum(x, 2, "test");
  EXPECT_EQ(x[1], 2.5);
  EXPECT_EQ(c.allgather_strings("hello", "test"), std::vector<std::string>{"hello"});
  ReduceScatter rs;
  std::vector<float> scratch(3), out = {10, 10, 10};
  rs.start(c, a.data(), counts, z, scratch.data());
  rs.finish(out.data(), ReduceScatter::Mode::kAccumulate, "test");
  EXPECT_EQ(out, (std::vector<float>{11, 12, 13}));
  auto sub = c.split(0, 0);
  EXPECT_EQ(sub->size(), 1);
  EXPECT_EQ(c.stats().calls[size_t(CommKind::kAllGather)], 2);  // allgatherv + allgather_strings
}

struct StepOut {
  ForwardStats st;
  std::vector<float> grads;
  uint64_t routing = 0;
};

std::vector<int32_t> tokens(const ModelConfig& c, int64_t B, int64_t T, uint64_t seed) {
  std::vector<float> u(B * (T + 1 + c.mtp_depth));
  fill_normal(u.data(), int64_t(u.size()), 1.0f, seed, 7);
  std::vector<int32_t> t(u.size());
  for (size_t i = 0; i < u.size(); ++i) t[i] = int32_t(std::abs(u[i]) * 1000) % int32_t(c.vocab_size);
  return t;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// FSDP and EP through LocalComm take the distributed code paths (provider
// spans, counts exchange, pack, route, expert-major unpack with padding,
// combine) yet must reproduce the flat single-device step bit for bit.
TEST(Orchestration, LocalCommFsdpAndEpMatchTheFlatPathBitwise) {
  set_num_threads(1);  // tiny shapes: OpenMP spin-waits would dominate on shared cores
  for (const ModelConfig& c : configs()) {
    const int64_t B = 3, T = 8;
    Transformer model(c, B, T, MatmulPrecision::kFp32);
    const ParamLayout& L = model.layout();
    std::vector<float> params(L.total());
    init_params(params.data(), L, c, 5);
    const std::vector<int32_t> tok = tokens(c, B, T, 11);

    StepOut flat;
    flat.grads.assign(L.total(), 0.0f);
    flat.st = model.forward_backward(params.data(), flat.grads.data(), tok.data(), 0.5f, nullptr);
    flat.routing = model.routing_hash();

    for (Prefetch pf : {Prefetch::kOff, Prefetch::kNextLayer}) {
      LocalComm world;
      Mesh mesh(world, MeshShape{1, 1});
      ShardPlan plan(L, c, MeshShape{1, 1}, 0);
      ASSERT_EQ(plan.local_size(), L.total());
      std::unique_ptr<EpDispatcher> ep;
      if (c.n_experts > 0) ep = std::make_unique<EpDispatcher>(mesh.ep(), c, B, T);
      StepOut d;
      d.grads.assign(L.total(), 0.0f);
      FsdpProvider fsdp(mesh, plan, c.n_units(), params.data(), d.grads.data(), pf, ep.get());
      d.st = model.forward_backward(fsdp, tok.data(), 0.5f, nullptr);
      d.routing = model.routing_hash();
      EXPECT_EQ(d.st.loss, flat.st.loss);
      EXPECT_EQ(d.st.aux_loss, flat.st.aux_loss);
      EXPECT_EQ(d.st.mtp_loss, flat.st.mtp_loss);
      EXPECT_EQ(d.st.dropped, flat.st.dropped);
      EXPECT_EQ(d.routing, flat.routing);
      EXPECT_TRUE(same_bits(d.grads, flat.grads)) << "gradients differ (latent " << c.d_latent << ")";
      // Evaluation forward through the provider, too.
      EXPECT_EQ(model.forward(fsdp, tok.data(), nullptr).loss, model.forward(params.data(), tok.data(), nullptr).loss);
    }
  }
}

// A checkpoint written as four ranks' shard files (2 x 2 mesh) reloads under
// 2-rank and 1-rank plans, and its tensor hash equals a whole-tensor write.
TEST(Resharding, FourRankShardFilesReloadUnderOtherPlans) {
  const ModelConfig c = moe_config();
  ParamLayout L;
  build_layout(c, L);
  std::vector<float> full(L.total());
  init_params(full.data(), L, c, 9);
  const std::string root =
      (std::filesystem::temp_directory_path() / ("moetrain-dist-test-" + std::to_string(getpid()))).string();
  std::filesystem::remove_all(root);

  auto pieces = [&](const ShardPlan& p, std::vector<float>& local) {
    local.assign(p.local_size(), 0.0f);
    for (const OwnedRange& o : p.owned()) std::copy(full.begin() + o.lo, full.begin() + o.hi, local.begin() + o.local);
    std::vector<TensorView> v;
    for (const OwnedRange& o : p.owned())
      for (const ParamEntry& e : L.entries()) {
        const int64_t lo = std::max(o.lo, e.offset), hi = std::min(o.hi, e.offset + e.numel);
        if (lo < hi) v.push_back({e.name, e.shape, local.data() + o.local + (lo - o.lo), lo - e.offset, hi - lo});
      }
    return v;
  };
  const MeshShape four{2, 2};
  auto staging = begin_checkpoint(root, 7);
  ASSERT_TRUE(staging.is_ok()) << staging.status().message();
  std::vector<ShardFile> shards;
  for (int64_t r = 0; r < 4; ++r) {
    ShardPlan p(L, c, four, r);
    std::vector<float> local;
    auto sf = write_shard_file(staging.value(), ShardRank{r, 4}, pieces(p, local));
    ASSERT_TRUE(sf.is_ok()) << sf.status().message();
    shards.push_back(sf.value());
  }
  ASSERT_TRUE(commit_checkpoint(root, 7, staging.value(), shards, "", nlohmann::json::object(), 0).is_ok());
  auto ck = read_checkpoint(root + "/" + checkpoint_dir_name(7));
  ASSERT_TRUE(ck.is_ok()) << ck.status().message();

  std::vector<TensorView> whole;
  for (const ParamEntry& e : L.entries()) whole.push_back({e.name, e.shape, full.data() + e.offset});
  EXPECT_EQ(ck.value().tensor_hash, compute_tensor_hash(whole));

  for (MeshShape shape : {MeshShape{2, 1}, MeshShape{1, 2}, MeshShape{1, 1}}) {
    for (int64_t r = 0; r < shape.world(); ++r) {
      ShardPlan p(L, c, shape, r);
      std::vector<float> expect;
      const std::vector<TensorView> want = pieces(p, expect);
      std::vector<float> got(p.local_size(), -1.0f);
      for (const TensorView& v : want)
        ASSERT_TRUE(load_range_into(ck.value(), v.name, v.offset, v.count, got.data() + (v.data - expect.data()))
                        .is_ok());
      EXPECT_TRUE(same_bits(got, expect)) << "mesh " << shape.ep << "x" << shape.fsdp << " rank " << r;
    }
  }
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace mt
