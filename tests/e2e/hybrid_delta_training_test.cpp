// hybrid_delta_training_test.cpp — `moetrain train` on a hybrid of gated-delta ("D") and attention
// layers: the loss falls, two runs with one seed end in the same tensors with the same per-step
// losses, and 10 steps + save + resume to 20 ends bit for bit where 20 uninterrupted steps end.
#include <gtest/gtest.h>

#include "support/e2e.h"

namespace mt::e2e {
namespace {

std::vector<std::string> hybrid(const std::string& run_dir, int64_t steps) {
  std::vector<std::string> a = {"--preset", "tiny-test", "--run-dir", run_dir};
  for (const std::string& s :
       {std::string("model.n_layers=4"), std::string("model.layer_pattern=\"DLDG\""), std::string("model.window=16"),
        std::string("model.delta_heads=2"), std::string("model.delta_key_dim=16"),
        std::string("model.delta_value_dim=24"), std::string("model.delta_chunk=16"), std::string("train.threads=1"),
        std::string("train.seed=1234"), "train.steps=" + std::to_string(steps), std::string("train.checkpoint_every=10")}) {
    a.push_back("--set");
    a.push_back(s);
  }
  return a;
}

TEST(HybridDelta, LearnsIsDeterministicAndResumesBitExact) {
  TempDir tmp;
  const auto a = train(hybrid(tmp / "a", 20));
  const auto b = train(hybrid(tmp / "b", 20));
  ASSERT_EQ(a.exit_code, 0) << a;
  ASSERT_EQ(b.exit_code, 0) << b;
  const Inspect ia = inspect(ckpt_dir(tmp / "a", 20)), ib = inspect(ckpt_dir(tmp / "b", 20));
  ASSERT_TRUE(ia.ok()) << ia.proc;
  ASSERT_TRUE(ib.ok()) << ib.proc;
  EXPECT_EQ(ia.tensor_hash(), ib.tensor_hash());
  const auto la = losses(read_metrics(tmp / "a")), lb = losses(read_metrics(tmp / "b"));
  ASSERT_EQ(la.size(), 20u);
  EXPECT_EQ(la, lb);
  EXPECT_LT(la.back(), la.front()) << "the hybrid model does not learn";

  // 10 steps, then resume to 20.
  const auto c1 = train(hybrid(tmp / "c", 10));
  ASSERT_EQ(c1.exit_code, 0) << c1;
  auto resume = hybrid(tmp / "c", 20);
  resume.push_back("--resume");
  const auto c2 = train(resume);
  ASSERT_EQ(c2.exit_code, 0) << c2;
  const Inspect ic = inspect(ckpt_dir(tmp / "c", 20));
  ASSERT_TRUE(ic.ok()) << ic.proc;
  EXPECT_EQ(ia.tensor_hash(), ic.tensor_hash()) << "resumed hybrid run differs from the uninterrupted one";
  EXPECT_EQ(done_state_hash(a.err), done_state_hash(c2.err));
}

}  // namespace
}  // namespace mt::e2e
