// distributed_training_test.cpp — `mpirun -np N moetrain train` against the
// one-process run (no MPI) on the tiny-test MoE with capacity drops:
//  - np=2 (ep=2), np=2 (fsdp=2), np=4 (ep=2 x fsdp=2), and np=4 for a hybrid
//    with gated-delta layers: per-step losses
//    within kLossTol, token-drop decisions (expert loads, drop fractions)
//    identical, final parameters within kParamTol, and the comm metrics equal
//    the closed forms of dist/comm_volume.h;
//  - with one multi-token-prediction module (an MoE block per module: one
//    more FSDP unit, its experts sharded by EP), np=4 (ep=2 x fsdp=2) agrees
//    with one process on both losses, the drops and the parameters;
//  - resume at the same layout is bit-identical; one checkpoint loads
//    bit-exactly at np=1, 2 and 4 (same state hash); np=4 -> np=2 -> np=1 ->
//    np=4 resharded continuations follow the uninterrupted run;
//  - weight streaming (stream.enabled, host and disk stores) at ep=2 and at
//    fsdp=2 ends in the same state hash as the same layout computing in place;
//  - a hung rank, a dead rank, mismatched configs and impossible layouts end
//    the job non-zero with a message naming the rank or the key.
//
// Tolerances. Layouts differ only in float summation order: weight
// gradients are sums over tokens split across ranks and added back in rank
// order, GEMMs see fewer rows per call, the gradient norm sums per-rank
// partials. Each is a relative perturbation near float epsilon (1e-7);
// measured over 20 AdamW steps the losses agree to ~1e-8 relative and the
// parameters to ~1e-6 of each tensor's scale. kLossTol = 1e-5 and kParamTol
// = 1e-4 keep a 10-100x margin, while any real fault (a lost shard, a wrong
// 1/world scale, moments not restored) moves them by 1e-3 or more.
#include <gtest/gtest.h>

#include "dist/comm_volume.h"
#include "dist/shard_plan.h"
#include "model/weights.h"
#include "support/mpi.h"
#include "train/run_config.h"

namespace mt::e2e {
namespace {

constexpr double kLossTol = 1e-5;
constexpr double kParamTol = 1e-4;

const std::vector<std::string> kBase = {"model.capacity_factor=1.0", "train.threads=1"};

std::vector<std::string> tiny(const std::string& run_dir, std::vector<std::string> sets) {
  std::vector<std::string> a = {"--preset", "tiny-test", "--run-dir", run_dir};
  sets.insert(sets.begin(), kBase.begin(), kBase.end());
  for (const std::string& s : sets) {
    a.push_back("--set");
    a.push_back(s);
  }
  return a;
}

struct Layout {
  int np, ep, fsdp;
  std::string name() const { return "np" + std::to_string(np) + "_ep" + std::to_string(ep) + "_fsdp" + std::to_string(fsdp); }
  std::vector<std::string> sets() const { return {"dist.ep=" + std::to_string(ep), "dist.fsdp=" + std::to_string(fsdp)}; }
};

ProcessResult run_layout(const Layout& l, const std::string& dir, std::vector<std::string> sets,
                         const std::vector<std::string>& extra = {}) {
  for (const std::string& s : l.sets()) sets.push_back(s);
  std::vector<std::string> args = tiny(dir, sets);
  args.insert(args.end(), extra.begin(), extra.end());
  return l.np == 1 ? train(args, 120) : mpi_train(l.np, args);
}

// Losses of steps [from, to] (1-based) agree within kLossTol relative.
::testing::AssertionResult losses_close(const std::vector<json>& a, const std::vector<json>& b, int64_t from,
                                        int64_t to) {
  for (int64_t s = from; s <= to; ++s) {
    const json* x = nullptr;
    const json* y = nullptr;
    for (const json& r : a) if (r.is_object() && r.value("step", -1) == s) x = &r;
    for (const json& r : b) if (r.is_object() && r.value("step", -1) == s) y = &r;
    if (!x || !y) return ::testing::AssertionFailure() << "step " << s << " missing from the metrics";
    const double la = (*x)["loss"].get<double>(), lb = (*y)["loss"].get<double>();
    if (!(std::fabs(la - lb) <= kLossTol * std::fabs(la)))
      return ::testing::AssertionFailure() << "step " << s << ": loss " << la << " vs " << lb << " (rel "
                                           << std::fabs(la - lb) / std::fabs(la) << ")";
  }
  return ::testing::AssertionSuccess();
}

TEST(Layouts, MatchTheOneProcessRun) {
  TempDir tmp;
  const Layout one{1, 1, 1};
  const auto base = run_layout(one, tmp / "one", {});
  ASSERT_EQ(base.exit_code, 0) << base;
  const auto mb = read_metrics(tmp / "one");
  ASSERT_TRUE(has_steps_1_to_n(mb, 20));
  bool any_drop = false;
  for (const json& r : mb) any_drop |= r["dropped_frac"].get<double>() > 0;
  ASSERT_TRUE(any_drop) << "the config must drop tokens for the drop-decision check to mean anything";

  auto cfg = load_run_config(MT_SOURCE_DIR "/configs/tiny-test.toml", kBase);
  ASSERT_TRUE(cfg.is_ok()) << cfg.status().message();
  ParamLayout L;
  mt::build_layout(cfg.value().model, L);

  for (const Layout& l : {Layout{2, 2, 1}, Layout{2, 1, 2}, Layout{4, 2, 2}}) {
    SCOPED_TRACE(l.name());
    const std::string dir = tmp / l.name();
    const auto r = run_layout(l, dir, {});
    ASSERT_EQ(r.exit_code, 0) << r;
    ASSERT_FALSE(done_state_hash(r.err).empty()) << r;
    const auto m = read_metrics(dir);
    ASSERT_TRUE(has_steps_1_to_n(m, 20)) << r;
    EXPECT_TRUE(losses_close(mb, m, 1, 20));
    for (size_t i = 0; i < m.size(); ++i) {
      EXPECT_EQ(m[i]["expert_load"], mb[i]["expert_load"]) << "step " << i + 1;
      EXPECT_EQ(m[i]["dropped_frac"], mb[i]["dropped_frac"]) << "step " << i + 1;
    }
    const CkptDiff d = compare_checkpoints(ckpt_dir(tmp / "one", 20), ckpt_dir(dir, 20));
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_LE(d.max_rel, kParamTol) << "worst tensor " << d.worst;
    std::cout << "[mpi] " << l.name() << ": parameters and moments within " << d.max_rel << " (" << d.worst << ")\n";

    // Rank 0's bytes per collective kind equal the closed forms.
    const ShardPlan plan(L, cfg.value().model, MeshShape{l.ep, l.fsdp}, 0);
    const StepCommBytes want = step_comm_bytes(plan, cfg.value().model, 1, cfg.value().train.batch_size / l.np,
                                               cfg.value().train.seq_len);
    for (const json& row : m) {
      const json& c = row["comm"];
      ASSERT_EQ(c["world_size"], l.np);
      EXPECT_EQ(c["allgather_bytes"].get<int64_t>(), want.allgather) << "step " << row["step"];
      EXPECT_EQ(c["reduce_scatter_bytes"].get<int64_t>(), want.reduce_scatter) << "step " << row["step"];
      EXPECT_EQ(c["allreduce_bytes"].get<int64_t>(), want.allreduce) << "step " << row["step"];
      // Capacity mode: the fixed-size dispatch, plus three row all-to-alls of at most as many rows.
      if (l.ep > 1) {
        EXPECT_GT(c["alltoall_bytes"].get<int64_t>(), want.alltoall_fixed);
        EXPECT_LE(c["alltoall_bytes"].get<int64_t>(), 4 * want.alltoall_fixed);
      } else {
        EXPECT_EQ(c["alltoall_bytes"].get<int64_t>(), 0);
      }
      EXPECT_GE(c["wait_s"].get<double>(), 0.0);
    }
  }
}

// Multi-head latent attention (model/mla_block.h) with a query latent, on a sliding-window and a global
// layer: FSDP x EP on 4 ranks agrees with one process within the same tolerances.
TEST(Layouts, MlaMatchesOneProcess) {
  TempDir tmp;
  const std::vector<std::string> mla = {"model.attention=\"mla\"", "model.q_lora_rank=32", "model.kv_lora_rank=24",
                                        "model.qk_nope_head_dim=12", "model.qk_rope_head_dim=4",
                                        "model.v_head_dim=16", "model.layer_pattern=\"LG\"", "model.window=16",
                                        "train.steps=10"};
  const auto base = run_layout(Layout{1, 1, 1}, tmp / "one", mla);
  ASSERT_EQ(base.exit_code, 0) << base;
  const Layout l{4, 2, 2};
  const auto r = run_layout(l, tmp / l.name(), mla);
  ASSERT_EQ(r.exit_code, 0) << r;
  const auto mb = read_metrics(tmp / "one"), m = read_metrics(tmp / l.name());
  ASSERT_TRUE(has_steps_1_to_n(m, 10)) << r;
  EXPECT_TRUE(losses_close(mb, m, 1, 10));
  for (size_t i = 0; i < m.size(); ++i) EXPECT_EQ(m[i]["expert_load"], mb[i]["expert_load"]) << "step " << i + 1;
  const CkptDiff d = compare_checkpoints(ckpt_dir(tmp / "one", 10), ckpt_dir(tmp / l.name(), 10));
  ASSERT_TRUE(d.ok) << d.error;
  EXPECT_LE(d.max_rel, kParamTol) << "worst tensor " << d.worst;
  std::cout << "[mpi] MLA " << l.name() << ": parameters and moments within " << d.max_rel << " (" << d.worst
            << ")\n";
}

// Dropless EP: row counts first, then variable-size all-to-alls.
TEST(Layouts, DroplessExpertParallelMatchesOneProcess) {
  TempDir tmp;
  const std::vector<std::string> dropless = {"model.capacity_factor=0.0", "train.steps=10"};
  const auto base = run_layout(Layout{1, 1, 1}, tmp / "one", dropless);
  ASSERT_EQ(base.exit_code, 0) << base;
  const auto r = run_layout(Layout{2, 2, 1}, tmp / "ep", dropless);
  ASSERT_EQ(r.exit_code, 0) << r;
  const auto mb = read_metrics(tmp / "one"), m = read_metrics(tmp / "ep");
  ASSERT_TRUE(has_steps_1_to_n(m, 10)) << r;
  EXPECT_TRUE(losses_close(mb, m, 1, 10));
  for (size_t i = 0; i < m.size(); ++i) {
    EXPECT_EQ(m[i]["expert_load"], mb[i]["expert_load"]) << "step " << i + 1;
    EXPECT_EQ(m[i]["dropped_frac"].get<double>(), 0.0);
  }
}

// dist.ep_overlap = false completes each EP exchange when it is posted; the
// rows, and so the run, are the same bit for bit, fixed capacity or dropless.
TEST(Layouts, ExpertParallelOverlapChangesNoBit) {
  TempDir tmp;
  for (const char* cf : {"model.capacity_factor=1.0", "model.capacity_factor=0.0"}) {
    SCOPED_TRACE(cf);
    std::string hash[2];
    for (int off = 0; off < 2; ++off) {
      const std::string dir = tmp / (std::string(cf).substr(21) + (off ? "_off" : "_on"));
      std::vector<std::string> sets = {cf, "train.steps=6"};
      if (off) sets.push_back("dist.ep_overlap=false");
      const auto r = run_layout(Layout{2, 2, 1}, dir, sets);
      ASSERT_EQ(r.exit_code, 0) << r;
      ASSERT_TRUE(has_steps_1_to_n(read_metrics(dir), 6)) << r;
      hash[off] = done_state_hash(r.err);
      ASSERT_FALSE(hash[off].empty()) << r;
    }
    EXPECT_EQ(hash[0], hash[1]);
  }
}

// Multi-token prediction (model/mtp.h): the module is unit n_layers of the provider's walk.
TEST(Layouts, MultiTokenPredictionMatchesOneProcess) {
  TempDir tmp;
  const std::vector<std::string> mtp = {"model.mtp_depth=1", "train.steps=10"};
  const auto base = run_layout(Layout{1, 1, 1}, tmp / "one", mtp);
  ASSERT_EQ(base.exit_code, 0) << base;
  const Layout l{4, 2, 2};
  const auto r = run_layout(l, tmp / l.name(), mtp);
  ASSERT_EQ(r.exit_code, 0) << r;
  const auto mb = read_metrics(tmp / "one"), m = read_metrics(tmp / l.name());
  ASSERT_TRUE(has_steps_1_to_n(m, 10)) << r;
  EXPECT_TRUE(losses_close(mb, m, 1, 10));
  for (size_t i = 0; i < m.size(); ++i) {
    const double a = mb[i]["mtp_loss"].get<double>(), b = m[i]["mtp_loss"].get<double>();
    EXPECT_LE(std::fabs(a - b), kLossTol * a) << "step " << i + 1;
    EXPECT_EQ(m[i]["expert_load"], mb[i]["expert_load"]) << "step " << i + 1;
    EXPECT_EQ(m[i]["expert_load"].size(), 3u) << "two layers and the module route";
    EXPECT_EQ(m[i]["dropped_frac"], mb[i]["dropped_frac"]) << "step " << i + 1;
  }
  const CkptDiff d = compare_checkpoints(ckpt_dir(tmp / "one", 10), ckpt_dir(tmp / l.name(), 10));
  ASSERT_TRUE(d.ok) << d.error;
  EXPECT_LE(d.max_rel, kParamTol) << "worst tensor " << d.worst;
  std::cout << "[mpi] mtp " << l.name() << ": parameters and moments within " << d.max_rel << " (" << d.worst << ")\n";
  auto cfg = load_run_config(MT_SOURCE_DIR "/configs/tiny-test.toml", {"model.capacity_factor=1.0", "model.mtp_depth=1"});
  ASSERT_TRUE(cfg.is_ok()) << cfg.status().message();
  ParamLayout L;
  mt::build_layout(cfg.value().model, L);
  const ShardPlan plan(L, cfg.value().model, MeshShape{l.ep, l.fsdp}, 0);
  const StepCommBytes want =
      step_comm_bytes(plan, cfg.value().model, 1, cfg.value().train.batch_size / l.np, cfg.value().train.seq_len);
  for (const json& row : m) {
    EXPECT_EQ(row["comm"]["allgather_bytes"].get<int64_t>(), want.allgather) << "step " << row["step"];
    EXPECT_EQ(row["comm"]["reduce_scatter_bytes"].get<int64_t>(), want.reduce_scatter) << "step " << row["step"];
    EXPECT_EQ(row["comm"]["allreduce_bytes"].get<int64_t>(), want.allreduce) << "step " << row["step"];
  }
  ASSERT_EQ(r.exit_code, 0) << r;
}

// A hybrid of gated-delta and attention layers (model/delta_block.h): FSDP shards and gathers the
// D layers' tensors like any other; ep=2 x fsdp=2 follows the one-process run.
TEST(Layouts, HybridGatedDeltaMatchesOneProcess) {
  TempDir tmp;
  const std::vector<std::string> hybrid = {"model.n_layers=4", "model.layer_pattern=\"DLDG\"", "model.window=16",
                                           "model.delta_heads=2", "model.delta_key_dim=16",
                                           "model.delta_value_dim=24", "model.delta_chunk=16", "train.steps=10"};
  const auto base = run_layout(Layout{1, 1, 1}, tmp / "one", hybrid);
  ASSERT_EQ(base.exit_code, 0) << base;
  const Layout l{4, 2, 2};
  const auto r = run_layout(l, tmp / l.name(), hybrid);
  ASSERT_EQ(r.exit_code, 0) << r;
  const auto mb = read_metrics(tmp / "one"), m = read_metrics(tmp / l.name());
  ASSERT_TRUE(has_steps_1_to_n(m, 10)) << r;
  EXPECT_TRUE(losses_close(mb, m, 1, 10));
  for (size_t i = 0; i < m.size(); ++i) {
    EXPECT_EQ(m[i]["expert_load"], mb[i]["expert_load"]) << "step " << i + 1;
    EXPECT_EQ(m[i]["dropped_frac"], mb[i]["dropped_frac"]) << "step " << i + 1;
  }
  const CkptDiff d = compare_checkpoints(ckpt_dir(tmp / "one", 10), ckpt_dir(tmp / l.name(), 10));
  ASSERT_TRUE(d.ok) << d.error;
  EXPECT_LE(d.max_rel, kParamTol) << "worst tensor " << d.worst;
  std::cout << "[mpi] hybrid " << l.name() << ": parameters and moments within " << d.max_rel << " (" << d.worst
            << ")\n";
}

// Streaming only moves bytes: each rank streams its own shard (experts under
// EP, its FSDP chunks all-gathered from the store), so the state is the
// in-place run's bit for bit, on either store tier.
TEST(Layouts, WeightStreamingIsBitIdenticalAtEachLayout) {
  TempDir tmp;
  const std::vector<std::string> sets = {"train.steps=4", "train.grad_accum=2"};
  for (const Layout& l : {Layout{2, 2, 1}, Layout{2, 1, 2}}) {
    const auto in_place = run_layout(l, tmp / (l.name() + "_in_place"), sets);
    ASSERT_EQ(in_place.exit_code, 0) << in_place;
    for (const char* store : {"host", "disk"}) {
      std::vector<std::string> st = sets;
      st.insert(st.end(), {"stream.enabled=true", std::string("stream.store=\"") + store + "\"", "stream.prefetch_layers=2"});
      const auto streamed = run_layout(l, tmp / (l.name() + "_" + store), st);
      ASSERT_EQ(streamed.exit_code, 0) << streamed;
      EXPECT_EQ(done_state_hash(streamed.err), done_state_hash(in_place.err)) << l.name() << ", " << store << " store";
      const auto rows = read_metrics(tmp / (l.name() + "_" + store));
      ASSERT_FALSE(rows.empty());
      EXPECT_GT(rows.back()["stream"]["bytes_in"].get<int64_t>(), 0) << l.name();
    }
  }
}

TEST(Checkpoints, ResumeAndReshardAcrossWorldSizes) {
  TempDir tmp;
  const Layout four{4, 2, 2}, two_ep{2, 2, 1}, two_fsdp{2, 1, 2}, one{1, 1, 1};
  const std::vector<std::string> every5 = {"train.checkpoint_every=5", "train.keep_checkpoints=4"};

  // A: the uninterrupted np=4 run, checkpoints at 5, 10, 15, 20.
  const auto a = run_layout(four, tmp / "a", every5);
  ASSERT_EQ(a.exit_code, 0) << a;
  const auto ma = read_metrics(tmp / "a");
  ASSERT_TRUE(has_steps_1_to_n(ma, 20)) << a;

  // Same layout, resumed from step 10: bit-identical.
  seed_run_dir(ckpt_dir(tmp / "a", 10), tmp / "b");
  const auto b = run_layout(four, tmp / "b", every5, {"--resume"});
  ASSERT_EQ(b.exit_code, 0) << b;
  EXPECT_EQ(resumed_from(b.err).second, 10) << b;
  EXPECT_EQ(inspect(ckpt_dir(tmp / "b", 20)).tensor_hash(), inspect(ckpt_dir(tmp / "a", 20)).tensor_hash());
  EXPECT_EQ(done_state_hash(b.err), done_state_hash(a.err));
  const auto mbb = read_metrics(tmp / "b");  // a fresh run dir: steps 11..20 only
  ASSERT_EQ(mbb.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(mbb[i]["step"], ma[i + 10]["step"]);
    EXPECT_EQ(mbb[i]["loss"], ma[i + 10]["loss"]) << "step " << i + 11;  // exact
    EXPECT_EQ(mbb[i]["grad_norm"], ma[i + 10]["grad_norm"]) << "step " << i + 11;
  }

  // One checkpoint, loaded at every world size: the same whole-model state
  // hash (parameters, AdamW moments, router biases), bit for bit.
  std::string h4;
  for (const Layout& l : {four, two_ep, two_fsdp, one}) {
    const std::string dir = tmp / ("load_" + l.name());
    seed_run_dir(ckpt_dir(tmp / "a", 10), dir);
    const auto r = run_layout(l, dir, {"train.steps=10"}, {"--resume"});
    ASSERT_EQ(r.exit_code, 0) << r;
    const std::string h = done_state_hash(r.err);
    ASSERT_FALSE(h.empty()) << r;
    if (h4.empty()) h4 = h;
    EXPECT_EQ(h, h4) << l.name() << " loaded the step-10 checkpoint differently";
  }

  // np=4 -> np=2 (from step 5) -> np=1 (from the np=2 run's step 10) ->
  // np=4 (from the np=1 run's step 15): every continuation follows A.
  seed_run_dir(ckpt_dir(tmp / "a", 5), tmp / "c2");
  const auto c2 = run_layout(two_ep, tmp / "c2", every5, {"--resume"});
  ASSERT_EQ(c2.exit_code, 0) << c2;
  EXPECT_TRUE(losses_close(ma, read_metrics(tmp / "c2"), 6, 20));
  const CkptDiff d10 = compare_checkpoints(ckpt_dir(tmp / "a", 10), ckpt_dir(tmp / "c2", 10));
  ASSERT_TRUE(d10.ok) << d10.error;
  EXPECT_LE(d10.max_rel, kParamTol) << "worst tensor " << d10.worst;  // includes adam_m.*, adam_v.*

  seed_run_dir(ckpt_dir(tmp / "c2", 10), tmp / "c1");
  const auto c1 = run_layout(one, tmp / "c1", every5, {"--resume"});
  ASSERT_EQ(c1.exit_code, 0) << c1;
  EXPECT_EQ(resumed_from(c1.err).second, 10) << c1;
  EXPECT_TRUE(losses_close(ma, read_metrics(tmp / "c1"), 11, 20));

  seed_run_dir(ckpt_dir(tmp / "c1", 15), tmp / "c4");
  const auto c4 = run_layout(four, tmp / "c4", every5, {"--resume"});
  ASSERT_EQ(c4.exit_code, 0) << c4;
  EXPECT_TRUE(losses_close(ma, read_metrics(tmp / "c4"), 16, 20));
  const CkptDiff d20 = compare_checkpoints(ckpt_dir(tmp / "a", 20), ckpt_dir(tmp / "c4", 20));
  ASSERT_TRUE(d20.ok) << d20.error;
  EXPECT_LE(d20.max_rel, kParamTol) << "worst tensor " << d20.worst;
  std::cout << "[mpi] 4 -> 2 -> 1 -> 4 reshards end within " << d20.max_rel << " of the uninterrupted run\n";
}

TEST(Failures, HungRankEndsTheJobNamingIt) {
  TempDir tmp;
  const double t0 = now_s();
  std::vector<std::string> args = tiny(tmp / "h", {"dist.timeout_s=5"});
  args.insert(args.end(), {"--inject-fault", "hang:1:3"});
  const auto r = mpi_train(2, args, 120);
  EXPECT_FALSE(r.timed_out) << r;
  EXPECT_NE(r.exit_code, 0) << r;
  EXPECT_LT(now_s() - t0, 60.0);
  EXPECT_NE(r.err.find("rank 0: timed out after"), std::string::npos) << r;
  EXPECT_NE(r.err.find("from rank 1 (hung or dead)"), std::string::npos) << r;
}

TEST(Failures, DeadRankEndsTheJobNamingIt) {
  TempDir tmp;
  std::vector<std::string> args = tiny(tmp / "k", {"dist.timeout_s=10"});
  args.insert(args.end(), {"--inject-fault", "kill:1:3"});
  const auto r = mpi_train(2, args, 120);
  EXPECT_FALSE(r.timed_out) << r;
  EXPECT_NE(r.exit_code, 0) << r;
  const std::string all = r.out + r.err;
  EXPECT_TRUE(all.find("rank 1") != std::string::npos) << r;
  EXPECT_TRUE(done_state_hash(r.err).empty()) << r;
}

TEST(Failures, MismatchedConfigsAreDetectedAtStartUp) {
  TempDir tmp;
  std::vector<std::string> prog = {MT_MPIEXEC, "--allow-run-as-root", "--oversubscribe", "-np", "1"};
  const auto a = train_argv(tiny(tmp / "m", {})), b = train_argv(tiny(tmp / "m", {"train.lr=1e-3"}));
  prog.insert(prog.end(), a.begin(), a.end());
  prog.push_back(":");
  prog.insert(prog.end(), {"-np", "1"});
  prog.insert(prog.end(), b.begin(), b.end());
  const auto r = run_process(prog, 120, kRankEnv);
  EXPECT_NE(r.exit_code, 0) << r;
  EXPECT_NE(r.err.find("rank 1's resolved config and run options differs from rank 0's"), std::string::npos) << r;
  EXPECT_FALSE(fs::exists(tmp / "m/metrics.jsonl") && !read_metrics(tmp / "m").empty()) << "training started";
}

TEST(Failures, ImpossibleLayoutsAreRejected) {
  TempDir tmp;
  const auto r = mpi_train(2, tiny(tmp / "l", {"dist.ep=4", "dist.fsdp=1"}));
  EXPECT_NE(r.exit_code, 0) << r;
  EXPECT_NE(r.err.find("dist.ep x dist.fsdp = 4 x 1 = 4 but the job has 2 ranks"), std::string::npos) << r;
  const auto b = mpi_train(4, tiny(tmp / "b", {"train.batch_size=6"}));
  EXPECT_NE(b.exit_code, 0) << b;
  EXPECT_NE(b.err.find("train.batch_size = 6 must be a multiple of the 4 ranks"), std::string::npos) << b;
}

}  // namespace
}  // namespace mt::e2e
