// mtp_training_test.cpp — `moetrain train` with multi-token prediction (model.mtp_depth = 2 on
// tiny-test): one seed gives one final state; the metrics report the next-token and MTP losses
// apart, with lambda following its token schedule (0.3, then 0.1 after the switch); a run stopped
// at a checkpoint and resumed ends bit for bit where the uninterrupted run ends; generation runs
// without the modules, the raw export keeps them and the Hugging Face export refuses them.
#include <gtest/gtest.h>

#include <cmath>

#include "support/e2e.h"

namespace mt::e2e {
namespace {

// tiny-test: batch 4 x seq_len 64 = 256 tokens per step; the switch after 5 steps (1,280 tokens).
std::vector<std::string> mtp_run(const std::string& run_dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"--preset", "tiny-test", "--run-dir", run_dir};
  for (const char* s : {"train.threads=1", "train.steps=10", "train.checkpoint_every=5", "model.mtp_depth=2",
                        "model.mtp_loss_weight=0.3", "model.mtp_loss_weight_late=0.1",
                        "model.mtp_loss_weight_switch_tokens=1280"}) {
    a.push_back("--set");
    a.push_back(s);
  }
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST(MtpTraining, DeterministicScheduledAndResumedBitExact) {
  TempDir tmp;
  const auto a = train(mtp_run(tmp / "a"));
  const auto b = train(mtp_run(tmp / "b"));
  ASSERT_EQ(a.exit_code, 0) << a;
  ASSERT_EQ(b.exit_code, 0) << b;
  const Inspect ia = inspect(ckpt_dir(tmp / "a", 10)), ib = inspect(ckpt_dir(tmp / "b", 10));
  ASSERT_TRUE(ia.ok()) << ia.proc;
  ASSERT_TRUE(ib.ok()) << ib.proc;
  EXPECT_EQ(ia.tensor_hash(), ib.tensor_hash());

  const auto ma = read_metrics(tmp / "a");
  ASSERT_TRUE(has_steps_1_to_n(ma, 10));
  EXPECT_EQ(losses(ma), losses(read_metrics(tmp / "b")));
  for (size_t i = 0; i < ma.size(); ++i) {
    ASSERT_TRUE(ma[i].contains("mtp_loss") && ma[i].contains("mtp_weight")) << ma[i];
    const double mtp = ma[i]["mtp_loss"].get<double>();
    EXPECT_TRUE(std::isfinite(mtp) && mtp > 0.0) << "step " << i + 1;
    EXPECT_NE(mtp, ma[i]["loss"].get<double>()) << "step " << i + 1;
    EXPECT_EQ(ma[i]["mtp_weight"].get<double>(), i < 5 ? 0.3 : 0.1) << "step " << i + 1;
  }
  EXPECT_LT(ma.back()["mtp_loss"].get<double>(), ma.front()["mtp_loss"].get<double>());

  // Stopped after the step-5 checkpoint (before the switch), then resumed across it.
  const auto c1 = train(mtp_run(tmp / "c", {"--stop-at", "5"}));
  ASSERT_EQ(c1.exit_code, 0) << c1;
  auto resume = mtp_run(tmp / "c");
  resume.push_back("--resume");
  const auto c2 = train(resume);
  ASSERT_EQ(c2.exit_code, 0) << c2;
  EXPECT_EQ(resumed_from(c2.err).second, 5) << c2;
  const Inspect ic = inspect(ckpt_dir(tmp / "c", 10));
  ASSERT_TRUE(ic.ok()) << ic.proc;
  EXPECT_EQ(ic.tensor_hash(), ia.tensor_hash());
  const auto mc = read_metrics(tmp / "c");
  ASSERT_TRUE(has_steps_1_to_n(mc, 10));
  for (size_t i = 0; i < mc.size(); ++i) {
    EXPECT_EQ(mc[i]["loss"], ma[i]["loss"]) << "step " << i + 1;
    EXPECT_EQ(mc[i]["mtp_loss"], ma[i]["mtp_loss"]) << "step " << i + 1;
    EXPECT_EQ(mc[i]["mtp_weight"], ma[i]["mtp_weight"]) << "step " << i + 1;
  }

  // Generation ignores the modules; the raw export keeps them, and so does the Hugging Face one as the
  // project's custom code (Qwen2MoeForCausalLM, asked for by name, refuses them).
  const auto gen = run_process({moetrain_binary(), "generate", "--ckpt", tmp / "a", "--prompt", "hi",
                                "--max-new-tokens", "4", "--temperature", "0"});
  EXPECT_EQ(gen.exit_code, 0) << gen;
  const auto raw = run_process({moetrain_binary(), "export", "--ckpt", tmp / "a", "--format", "safetensors", "--out",
                                tmp / "raw"});
  EXPECT_EQ(raw.exit_code, 0) << raw;
  EXPECT_NE(read_file(tmp / "raw/model.safetensors").find("mtp.1.proj"), std::string::npos);
  const auto hf =
      run_process({moetrain_binary(), "export", "--ckpt", tmp / "a", "--out", tmp / "hf", "--hf-class", "qwen2_moe"});
  EXPECT_NE(hf.exit_code, 0) << hf;
  EXPECT_NE(hf.err.find("model.mtp_depth = 2"), std::string::npos) << hf;
  const auto custom = run_process({moetrain_binary(), "export", "--ckpt", tmp / "a", "--out", tmp / "custom"});
  EXPECT_EQ(custom.exit_code, 0) << custom;
  EXPECT_NE(read_file(tmp / "custom/model.safetensors").find("model.mtp.1.proj.weight"), std::string::npos);

  // The modules change training: without them the run ends elsewhere.
  const auto d = train({"--preset", "tiny-test", "--run-dir", tmp / "d", "--set", "train.threads=1", "--set",
                        "train.steps=10", "--set", "train.checkpoint_every=5"});
  ASSERT_EQ(d.exit_code, 0) << d;
  const Inspect id = inspect(ckpt_dir(tmp / "d", 10));
  ASSERT_TRUE(id.ok()) << id.proc;
  EXPECT_NE(id.tensor_hash(), ia.tensor_hash());
  EXPECT_FALSE(read_metrics(tmp / "d").front().contains("mtp_loss"));
}

}  // namespace
}  // namespace mt::e2e
