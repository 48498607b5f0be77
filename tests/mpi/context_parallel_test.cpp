// context_parallel_test.cpp — `mpirun -np N moetrain train` with dist.cp
// (dist/context_parallel.h) against the one-process run, on the tiny-test
// MoE with capacity drops, a sliding-window and a global layer:
//  - np=2 (cp 2, FSDP over both), np=4 (cp 2 x ep 2, FSDP x EP) and np=4
//    (cp 4), one with a multi-token-prediction module, and MLA (its latent
//    exchanged) at np=4 (cp 2 x ep 2) and np=2: per-step losses
//    within kLossTol and gradient norms within kNormTol, the drops and expert
//    loads identical, final parameters within kParamTol;
//  - rank 0's context bytes per step equal the closed form
//    (model/context_chunks.h) and `moetrain plan`'s figure for the layout on
//    the cpu cluster, its FSDP bytes are those of the same mesh without CP,
//    and its activations equal the planner's;
//  - dist.cp that does not divide the sequence or the ranks, a window wider
//    than a chunk's halo, a routing group across chunks and gated-delta
//    layers are refused naming the key.
#include <gtest/gtest.h>

#include <regex>

#include "dist/comm_volume.h"
#include "dist/shard_plan.h"
#include "model/context_chunks.h"
#include "model/weights.h"
#include "support/mpi.h"
#include "train/run_config.h"

namespace mt::e2e {
namespace {

// Tolerances. CP changes more summation orders than data parallelism does:
// every key's dK and dV is a sum over the ranks' queries, added in rank
// order. Measured (Zen 4, 8 steps): gradient norms within 2e-7 relative of
// the one-process run (data parallelism alone: 4e-9), losses within 3e-8;
// eight AdamW steps amplify that in the elements whose gradient is near
// zero (m / sqrt(v) ~ sign), to 3e-4 of the embedding's scale (dropless or
// at lr 1e-4: 1e-5). A lost halo or a missing rank's dK moves the norms by
// far more than kNormTol.
constexpr double kLossTol = 1e-5;
constexpr double kNormTol = 1e-6;
constexpr double kParamTol = 2e-3;

// Capacity drops (routing groups of 8 stay inside a chunk of 64 / 8 tokens at cp 4), a window of 8
// (a halo of 7 rows fits a chunk of 8).
const std::vector<std::string> kBase = {
    "model.capacity_factor=1.0", "model.routing_group=8", "model.layer_pattern=\"LG\"", "model.window=8",
    "train.threads=1",           "train.steps=8"};

std::vector<std::string> args_for(const std::string& run_dir, const std::vector<std::string>& extra) {
  std::vector<std::string> a = {"--preset", "tiny-test", "--run-dir", run_dir};
  std::vector<std::string> sets = kBase;
  sets.insert(sets.end(), extra.begin(), extra.end());
  for (const std::string& s : sets) a.insert(a.end(), {"--set", s});
  return a;
}

struct Layout {
  int np, cp, ep;
  std::vector<std::string> extra;  // more --set keys (for both runs)
  std::string tag;                 // what they are
  std::string name() const {
    return "np" + std::to_string(np) + "_cp" + std::to_string(cp) + "_ep" + std::to_string(ep) +
           (tag.empty() ? "" : "_" + tag);
  }
};

int64_t activations_line(const std::string& err) {
  std::smatch m;
  if (!std::regex_search(err, m, std::regex("# activations: ([0-9]+) bytes per rank"))) return -1;
  return std::stoll(m[1]);
}

TEST(ContextParallel, MatchesTheOneProcessRun) {
  TempDir tmp;
  const std::vector<std::string> mla = {"model.attention=\"mla\"", "model.q_lora_rank=32", "model.kv_lora_rank=24",
                                        "model.qk_nope_head_dim=12", "model.qk_rope_head_dim=4",
                                        "model.v_head_dim=16"};
  for (const Layout& l : {Layout{2, 2, 1, {}}, Layout{4, 2, 2, {}}, Layout{4, 4, 1, {}},
                          Layout{2, 2, 1, {"model.mtp_depth=1"}, "mtp"}, Layout{4, 2, 2, mla, "mla"},
                          Layout{2, 2, 1, mla, "mla"}}) {
    SCOPED_TRACE(l.name());
    const std::string one = tmp / ("one" + l.name()), dir = tmp / l.name();
    const auto base = train(args_for(one, l.extra), 120);
    ASSERT_EQ(base.exit_code, 0) << base;
    std::vector<std::string> extra = l.extra;
    extra.push_back("dist.cp=" + std::to_string(l.cp));
    extra.push_back("dist.ep=" + std::to_string(l.ep));
    const auto r = mpi_train(l.np, args_for(dir, extra));
    ASSERT_EQ(r.exit_code, 0) << r;
    const auto mb = read_metrics(one), m = read_metrics(dir);
    ASSERT_TRUE(has_steps_1_to_n(m, 8)) << r;
    bool any_drop = false;
    for (size_t i = 0; i < m.size(); ++i) {
      const double a = mb[i]["loss"].get<double>(), b = m[i]["loss"].get<double>();
      EXPECT_LE(std::fabs(a - b), kLossTol * a) << "step " << i + 1;
      const double na = mb[i]["grad_norm"].get<double>(), nb = m[i]["grad_norm"].get<double>();
      EXPECT_LE(std::fabs(na - nb), kNormTol * na) << "step " << i + 1;
      EXPECT_EQ(m[i]["expert_load"], mb[i]["expert_load"]) << "step " << i + 1;
      EXPECT_EQ(m[i]["dropped_frac"], mb[i]["dropped_frac"]) << "step " << i + 1;
      any_drop |= m[i]["dropped_frac"].get<double>() > 0;
      if (mb[i].contains("mtp_loss"))
        EXPECT_LE(std::fabs(mb[i]["mtp_loss"].get<double>() - m[i]["mtp_loss"].get<double>()),
                  kLossTol * mb[i]["mtp_loss"].get<double>());
    }
    EXPECT_TRUE(any_drop) << "the capacity path is not exercised";
    const CkptDiff d = compare_checkpoints(ckpt_dir(one, 8), ckpt_dir(dir, 8));
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_LE(d.max_rel, kParamTol) << "worst tensor " << d.worst;
    std::cout << "[mpi] " << l.name() << ": parameters and moments within " << d.max_rel << " (" << d.worst << ")\n";

    // Bytes: the context exchange's closed form, and FSDP's as without CP on the same mesh.
    std::vector<std::string> sets = kBase;
    sets.insert(sets.end(), extra.begin(), extra.end());
    auto cfg = load_run_config(MT_SOURCE_DIR "/configs/tiny-test.toml", sets);
    ASSERT_TRUE(cfg.is_ok()) << cfg.status().message();
    const RunConfig& rc = cfg.value();
    ParamLayout L;
    mt::build_layout(rc.model, L);
    const int64_t local_batch = rc.train.batch_size / (l.np / l.cp);
    const ShardPlan plan(L, rc.model, MeshShape{l.ep, l.np / l.ep}, 0);
    const StepCommBytes want =
        step_comm_bytes(plan, rc.model, 1, local_batch, rc.train.seq_len, ContextShape{l.cp, 0, 4, false});
    EXPECT_GT(want.context, 0);
    for (const json& row : m) {
      EXPECT_EQ(row["comm"]["context_bytes"].get<int64_t>(), want.context) << "step " << row["step"];
      EXPECT_EQ(row["comm"]["allgather_bytes"].get<int64_t>(), want.allgather) << "step " << row["step"];
      EXPECT_EQ(row["comm"]["reduce_scatter_bytes"].get<int64_t>(), want.reduce_scatter) << "step " << row["step"];
    }
    // The planner on the cpu cluster with parallel.cp: the same bytes and rank 0's activation allocation.
    if (l.ep == 1) {
      std::vector<std::string> plan_args = {"plan",      "--model",    MT_SOURCE_DIR "/configs/tiny-test.toml",
                                            "--cluster", "cpu",        "--layout",
                                            "cpu",       "--tokens",   "1e6",
                                            "--json",    "--no-sweep", "--search",
                                            "none"};
      for (const std::string& s : sets)
        if (!s.starts_with("dist.") && !s.starts_with("train.")) plan_args.insert(plan_args.end(), {"--set", s});
      const std::string n = std::to_string(l.np), B = std::to_string(local_batch);
      for (const std::string& s :
           {"layout.parallel.cp=" + std::to_string(l.cp), "layout.parallel.gpus=" + n,
            "cluster.topology.gpus_per_rack=" + n, "layout.batch.micro_batch=" + B, "layout.batch.global_batch=" + B})
        plan_args.insert(plan_args.end(), {"--set", s});
      const auto p = moetrain(plan_args);
      ASSERT_EQ(p.exit_code, 0) << p;
      const json j = json::parse(p.out);
      EXPECT_EQ(j["cp_bytes_per_step"].get<int64_t>(), want.context);
      EXPECT_EQ(j["memory"]["activations"].get<int64_t>(), activations_line(r.err)) << r.err;
    }
  }
}

TEST(ContextParallel, BadLayoutsAreRefusedNamingTheKey) {
  TempDir tmp;
  struct Bad {
    int np;
    std::vector<std::string> sets;
    std::string key, words;
  };
  const Bad cases[] = {
      {2, {"dist.cp=3"}, "dist.cp", "does not divide the 2 ranks"},
      {2, {"dist.cp=2", "train.seq_len=66", "model.routing_group=6"}, "dist.cp", "do not divide into 2 x 2 = 4 chunks"},
      {2, {"dist.cp=2", "model.window=20"}, "model.window", "more than a chunk of 16 tokens"},
      {2, {"dist.cp=2", "model.routing_group=32"}, "model.routing_group", "must divide a context-parallel chunk"},
      {2, {"dist.cp=2", "model.layer_pattern=\"DG\""}, "dist.cp", "gated-delta layer"},
  };
  int i = 0;
  for (const Bad& b : cases) {
    SCOPED_TRACE(b.words);
    const auto r = mpi_train(b.np, args_for(tmp / ("bad" + std::to_string(i++)), b.sets));
    EXPECT_NE(r.exit_code, 0) << r;
    EXPECT_NE(r.err.find(b.key + ":"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(b.words), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace mt::e2e
