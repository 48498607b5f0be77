// mla_training_test.cpp — `moetrain train` with multi-head latent attention
// (model.attention = "mla", sliding-window and global layers, a query latent):
// the run learns, two runs with one seed end in the same tensors, and
// "10 steps, save, resume to 20" ends bit for bit where "20 steps" ends;
// `moetrain generate` decodes the checkpoint from the compressed cache.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/e2e.h"

namespace mt::e2e {
namespace {

// tiny-test's MoE with MLA: 4 heads, q latent 32, kv latent 24, q-k heads 12 + RoPE 4, v heads 16;
// one sliding-window layer (window 16) and one global one.
std::vector<std::string> tiny_mla(const std::string& run_dir, std::vector<std::string> sets) {
  std::vector<std::string> a = {"--preset", "tiny-test", "--run-dir", run_dir};
  for (const char* s : {"model.attention=\"mla\"", "model.q_lora_rank=32", "model.kv_lora_rank=24",
                        "model.qk_nope_head_dim=12", "model.qk_rope_head_dim=4", "model.v_head_dim=16",
                        "model.layer_pattern=\"LG\"", "model.window=16", "train.threads=1"})
    sets.push_back(s);
  for (const std::string& s : sets) {
    a.push_back("--set");
    a.push_back(s);
  }
  return a;
}

TEST(MlaTraining, LearnsAndIsDeterministic) {
  TempDir tmp;
  const auto a = train(tiny_mla(tmp / "a", {}));
  const auto b = train(tiny_mla(tmp / "b", {}));
  ASSERT_EQ(a.exit_code, 0) << a;
  ASSERT_EQ(b.exit_code, 0) << b;
  const Inspect ia = inspect(ckpt_dir(tmp / "a", 20)), ib = inspect(ckpt_dir(tmp / "b", 20));
  ASSERT_TRUE(ia.ok()) << ia.proc;
  ASSERT_TRUE(ib.ok()) << ib.proc;
  EXPECT_EQ(ia.tensor_hash(), ib.tensor_hash());
  const auto ma = read_metrics(tmp / "a"), mb = read_metrics(tmp / "b");
  ASSERT_TRUE(has_steps_1_to_n(ma, 20));
  const auto la = losses(ma);
  EXPECT_EQ(la, losses(mb));
  EXPECT_LT(la.back(), la.front() - 0.5) << "MLA run did not learn";
}

TEST(MlaTraining, SaveThenResumeEqualsOneRun) {
  TempDir tmp;
  const auto whole = train(tiny_mla(tmp / "whole", {"train.checkpoint_every=10"}));
  ASSERT_EQ(whole.exit_code, 0) << whole;
  const auto first = train(tiny_mla(tmp / "split", {"train.checkpoint_every=10", "train.steps=10"}));
  ASSERT_EQ(first.exit_code, 0) << first;
  auto args = tiny_mla(tmp / "split", {"train.checkpoint_every=10"});
  args.push_back("--resume");
  const auto rest = train(args);
  ASSERT_EQ(rest.exit_code, 0) << rest;
  EXPECT_EQ(resumed_from(rest.err).second, 10) << rest;
  const Inspect iw = inspect(ckpt_dir(tmp / "whole", 20)), is = inspect(ckpt_dir(tmp / "split", 20));
  ASSERT_TRUE(iw.ok()) << iw.proc;
  ASSERT_TRUE(is.ok()) << is.proc;
  EXPECT_EQ(iw.tensor_hash(), is.tensor_hash()) << "resumed MLA run differs from the uninterrupted one";
  EXPECT_EQ(done_state_hash(whole.err), done_state_hash(rest.err));
  const auto lw = losses(read_metrics(tmp / "whole")), ls = losses(read_metrics(tmp / "split"));
  ASSERT_EQ(lw.size(), 20u);
  ASSERT_EQ(ls.size(), 20u);
  EXPECT_EQ(lw, ls);
}

// generate runs on the absorbed-form decoder: greedy text independent of the thread count, and the
// cache holds Dc + Dr = 28 values per token and layer: 2 layers x (4 prompt + 6 new) tokens, fp32 or bf16.
TEST(MlaTraining, GeneratesFromTheCompressedCache) {
  TempDir tmp;
  const auto t = train(tiny_mla(tmp / "run", {"train.steps=4", "train.checkpoint_every=4"}));
  ASSERT_EQ(t.exit_code, 0) << t;
  auto gen = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = {moetrain_binary(), "generate", "--ckpt", tmp / "run", "--prompt", "abc", "--json",
                                  "--max-new-tokens", "6", "--no-stop", "--temperature", "0"};
    a.insert(a.end(), extra.begin(), extra.end());
    const auto r = run_process(a, 120, kPassiveOmp);
    EXPECT_EQ(r.exit_code, 0) << r;
    return nlohmann::json::parse(r.out, nullptr, false);
  };
  const auto one = gen({"--threads", "1"}), two = gen({"--threads", "2"}), b16 = gen({"--kv-dtype", "bf16"});
  ASSERT_TRUE(one.is_object() && two.is_object() && b16.is_object());
  EXPECT_EQ(one["samples"][0]["tokens"].size(), 6u);
  EXPECT_EQ(one["samples"], two["samples"]);
  EXPECT_EQ(one["kv_cache_bytes"].get<int64_t>(), 2 * 10 * 28 * 4);
  EXPECT_EQ(b16["kv_cache_bytes"].get<int64_t>(), 2 * 10 * 28 * 2);
}

}  // namespace
}  // namespace mt::e2e
