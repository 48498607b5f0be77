// stream_training_test.cpp — weight streaming (docs/streaming.md) through
// `moetrain train`:
//  - a model whose training state is over 4x the compute-memory budget trains
//    with its measured compute memory under the budget, and ends bit for bit
//    where in-place training ends (host and disk stores, prefetch depths 0
//    and 2, gradient accumulation); the disk store's files are gone after;
//  - a budget below the kept activations recomputes layers (activation
//    checkpointing, train.activation_checkpointing = "auto"), bit-identically;
//    a budget below even the recomputing figure is refused, naming the key;
//  - sparse streaming (stream.expert_density = 0.5) trains, deterministically,
//    with the wire format's bytes reported;
//  - a streamed run SIGKILLed mid-step (gradients in the store, update not
//    applied) resumes to the uninterrupted run's state bit for bit.
#include <gtest/gtest.h>

#include "support/e2e.h"

namespace mt::e2e {
namespace {

constexpr int64_t kBudget = 28 << 20;  // bytes of compute memory

// 20 MoE layers of 16 experts at batch 2 x 16 tokens: about 8.2M parameters
// (131 MB of parameters, gradients and AdamW moments) against 23-25 MB of
// activations and streamed layer buffers.
std::vector<std::string> big_model(const std::string& run_dir, std::vector<std::string> sets) {
  std::vector<std::string> a = {"--preset", "tiny-test", "--run-dir", run_dir};
  sets.insert(sets.begin(), {"model.n_layers=20", "model.n_experts=16", "model.d_expert=128", "train.batch_size=2",
                             "train.seq_len=16", "train.threads=1"});
  for (const std::string& s : sets) {
    a.push_back("--set");
    a.push_back(s);
  }
  return a;
}

std::vector<std::string> streamed(const std::string& store, int64_t prefetch, std::vector<std::string> sets = {}) {
  sets.insert(sets.end(), {"stream.enabled=true", "stream.store=\"" + store + "\"",
                           "stream.prefetch_layers=" + std::to_string(prefetch),
                           "stream.compute_memory_bytes=" + std::to_string(kBudget)});
  return sets;
}

TEST(StreamTraining, StateFourTimesTheBudgetTrainsBitIdenticallyToInPlace) {
  TempDir tmp;
  for (const std::string accum : {"1", "2"}) {
    const std::vector<std::string> base = {"train.steps=4", "train.grad_accum=" + accum};
    const auto in_place = train(big_model(tmp / ("in_place" + accum), base));
    ASSERT_EQ(in_place.exit_code, 0) << in_place;
    const std::string want = done_state_hash(in_place.err);
    ASSERT_EQ(want.size(), 16u) << in_place;
    for (const auto& [store, prefetch] : std::vector<std::pair<std::string, int64_t>>{{"host", 1}, {"disk", 0}, {"disk", 2}}) {
      const std::string name = store + std::to_string(prefetch) + "_accum" + accum;
      const auto r = train(big_model(tmp / name, streamed(store, prefetch, base)));
      ASSERT_EQ(r.exit_code, 0) << r;
      EXPECT_EQ(done_state_hash(r.err), want) << name;
      const auto rows = read_metrics(tmp / name);
      ASSERT_TRUE(has_steps_1_to_n(rows, 4)) << name;
      for (const json& row : rows) {
        const json& s = row["stream"];
        const int64_t compute = s["compute_memory_bytes"], store_bytes = s["store_bytes"];
        EXPECT_LE(compute, kBudget) << name;
        EXPECT_GE(store_bytes, 4 * kBudget) << name;
        // Every weight crosses at least once per micro-batch (twice for the layers recomputed in
        // the backward), every gradient goes back once per micro-batch.
        EXPECT_GE(s["bytes_in"].get<int64_t>(), store_bytes / 4) << name;
        EXPECT_GE(s["bytes_out"].get<int64_t>(), store_bytes / 4 * std::stoll(accum) - 4096) << name;
        EXPECT_GE(s["stall_s"].get<double>(), 0.0);
      }
      EXPECT_FALSE(fs::exists(tmp / name + "/stream_store")) << "the disk store's scratch files were left behind";
    }
  }
}

// A disk store keeps the training state out of anonymous memory from start
// to exit: the closing state hash and the final checkpoint read the store a
// chunk at a time. Measured on this model (a Sapphire Rapids VM): peak RssAnon
// 44 MB, of a 28 MB budget; before the hash streamed, 168 MB (it gathered four
// whole-model copies). The margin is fixed: the binary, oneDNN, OpenMP.
TEST(StreamTraining, DiskStoreAnonymousMemoryStaysWithinTheBudgetToTheEnd) {
  TempDir tmp;
  constexpr int64_t kMargin = 48 << 20;
  for (const char* precision : {"fp32", "bf16"}) {
    SCOPED_TRACE(precision);
    const std::string run = tmp / precision;
    Background bg(train_argv(big_model(run, streamed("disk", 1,
                                                     {"train.steps=3", "train.checkpoint_every=2",
                                                      std::string("train.precision=") + precision,
                                                      std::string("optim.state_precision=") + precision}))),
                  tmp / "out", tmp / "err");
    int64_t peak = 0;
    while (bg.running()) {
      peak = std::max(peak, bg.rss_anon_bytes());
      sleep_s(0.003);
    }
    ASSERT_EQ(bg.wait().exit_code, 0) << read_file(tmp / "err");
    EXPECT_FALSE(done_state_hash(read_file(tmp / "err")).empty());
    const auto rows = read_metrics(run);
    ASSERT_TRUE(has_steps_1_to_n(rows, 3));
    EXPECT_GT(rows[0]["stream"]["store_bytes"].get<int64_t>(), 3 * kBudget);  // 12 bytes a parameter with bf16 moments
    EXPECT_LE(peak, kBudget + kMargin) << "peak anonymous memory " << peak / 1e6 << " MB";
    std::cout << "[e2e] disk store, " << precision << ": peak RssAnon " << peak / 1e6 << " MB (budget "
              << kBudget / 1e6 << " MB)\n";
  }
}

// Moments held in bf16 stream from the disk store like fp32 ones (the same
// bits as in place), and the store holds 4 bytes less per parameter:
// params, gradients, m and v take 12 bytes instead of 16.
TEST(StreamTraining, Bf16StateOnDiskTrainsBitIdenticallyToInPlace) {
  TempDir tmp;
  const std::vector<std::string> base = {"train.steps=3", "optim.state_precision=bf16"};
  const auto in_place = train(big_model(tmp / "in_place", base));
  ASSERT_EQ(in_place.exit_code, 0) << in_place;
  const auto disk = train(big_model(tmp / "disk", streamed("disk", 1, base)));
  ASSERT_EQ(disk.exit_code, 0) << disk;
  EXPECT_EQ(done_state_hash(disk.err), done_state_hash(in_place.err));
  EXPECT_FALSE(fs::exists(tmp / "disk/stream_store")) << "the disk store's scratch files were left behind";
  const auto fp32 = train(big_model(tmp / "disk32", streamed("disk", 1, {"train.steps=1"})));
  ASSERT_EQ(fp32.exit_code, 0) << fp32;
  const int64_t bytes16 = read_metrics(tmp / "disk").back()["stream"]["store_bytes"];
  const int64_t bytes32 = read_metrics(tmp / "disk32").back()["stream"]["store_bytes"];
  EXPECT_EQ(4 * bytes16, 3 * bytes32);
}

// 12 MiB cannot hold the kept activations (15.7 MiB) but holds the layer
// inputs: train.activation_checkpointing = "auto" recomputes each layer's
// forward before its backward, bit-identically, with state over 10x the budget.
TEST(StreamTraining, BudgetBelowTheActivationsRecomputesLayersBitIdentically) {
  TempDir tmp;
  const int64_t budget = 12 << 20;
  const std::vector<std::string> base = {"train.steps=3", "train.grad_accum=2"};
  const auto in_place = train(big_model(tmp / "in_place", base));
  ASSERT_EQ(in_place.exit_code, 0) << in_place;
  std::vector<std::string> st = streamed("disk", 1, base);
  st.push_back("stream.compute_memory_bytes=" + std::to_string(budget));  // the later --set wins
  const auto r = train(big_model(tmp / "r", st));
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.err.find("with layers recomputed"), std::string::npos) << r;
  EXPECT_EQ(done_state_hash(r.err), done_state_hash(in_place.err));
  for (const json& row : read_metrics(tmp / "r")) {
    EXPECT_LE(row["stream"]["compute_memory_bytes"].get<int64_t>(), budget);
    EXPECT_GE(row["stream"]["store_bytes"].get<int64_t>(), 10 * budget);
  }
  // Without recomputation the same budget is refused, naming both keys.
  st.push_back("train.activation_checkpointing=\"off\"");
  const auto off = train(big_model(tmp / "off", st));
  EXPECT_NE(off.exit_code, 0) << off;
  EXPECT_NE(off.err.find("stream.compute_memory_bytes"), std::string::npos) << off;
  EXPECT_NE(off.err.find("train.activation_checkpointing"), std::string::npos) << off;
}

TEST(StreamTraining, BudgetBelowTheComputeMemoryIsRefusedNamingTheKey) {
  TempDir tmp;
  const auto r = train(big_model(tmp / "r", {"stream.enabled=true", "stream.compute_memory_bytes=1000000"}));
  EXPECT_NE(r.exit_code, 0) << r;
  EXPECT_NE(r.err.find("stream.compute_memory_bytes"), std::string::npos) << r;
  EXPECT_NE(r.err.find("activations"), std::string::npos) << r;
}

// Sparse streaming: expert tensors arrive pruned to half their weights. The
// run trains (loss falls), differs from dense, repeats bit for bit (the
// pruning runs one tensor per thread; the GEMMs are what make other thread
// counts differ in the last bits, as without streaming), and reports the sparse wire format at (1/8 + 4 x 0.5) / 4 of the
// dense bytes.
TEST(StreamTraining, SparseExpertStreamingTrainsDeterministically) {
  TempDir tmp;
  auto sparse = [&](const std::string& name, const std::string& threads) {
    return train({"--preset", "tiny-test", "--run-dir", tmp / name, "--set", "train.steps=20", "--set",
                  "stream.enabled=true", "--set", "stream.expert_density=0.5", "--set", "train.threads=" + threads});
  };
  const auto one = sparse("one", "2"), two = sparse("two", "2");
  const auto dense = train({"--preset", "tiny-test", "--run-dir", tmp / "dense", "--set", "train.steps=20"});
  ASSERT_EQ(one.exit_code, 0) << one;
  ASSERT_EQ(two.exit_code, 0) << two;
  ASSERT_EQ(dense.exit_code, 0) << dense;
  EXPECT_EQ(done_state_hash(one.err), done_state_hash(two.err));
  EXPECT_NE(done_state_hash(one.err), done_state_hash(dense.err));
  const auto rows = read_metrics(tmp / "one");
  ASSERT_TRUE(has_steps_1_to_n(rows, 20));
  const std::vector<double> l = losses(rows);
  EXPECT_LT(l.back(), l.front());
  for (const json& row : rows) {
    const json& sp = row["stream"]["sparse"];
    const double ratio = sp["wire_bytes"].get<double>() / sp["dense_bytes"].get<double>();
    EXPECT_NEAR(ratio, 0.5 + 1.0 / 32.0, 2e-3);
  }
}

TEST(StreamTraining, KilledMidStepResumesBitExactly) {
  TempDir tmp;
  const std::vector<std::string> sets = streamed("disk", 1, {"train.steps=12", "train.checkpoint_every=4", "train.async_checkpoint=false"});
  const auto killed = train([&] {
    auto a = big_model(tmp / "b", sets);
    a.insert(a.end(), {"--inject-fault", "killmid:0:7"});
    return a;
  }());
  ASSERT_EQ(killed.term_signal, SIGKILL) << killed;
  EXPECT_NE(killed.err.find("mid-step 7"), std::string::npos) << killed;
  // The store was live when the process died; resume rebuilds it from the last checkpoint.
  EXPECT_TRUE(fs::exists(tmp / "b/stream_store/params.f32"));
  auto resume = big_model(tmp / "b", sets);
  resume.push_back("--resume");
  const auto b = train(resume);
  ASSERT_EQ(b.exit_code, 0) << b;
  EXPECT_EQ(resumed_from(b.err).second, 4) << b;

  const auto a = train(big_model(tmp / "a", {"train.steps=12", "train.checkpoint_every=4"}));  // in place
  ASSERT_EQ(a.exit_code, 0) << a;
  EXPECT_EQ(done_state_hash(b.err), done_state_hash(a.err));
  const Inspect ia = inspect(ckpt_dir(tmp / "a", 12)), ib = inspect(ckpt_dir(tmp / "b", 12));
  ASSERT_TRUE(ia.ok()) << ia.proc;
  ASSERT_TRUE(ib.ok()) << ib.proc;
  EXPECT_EQ(ia.tensor_hash(), ib.tensor_hash());
}

}  // namespace
}  // namespace mt::e2e
