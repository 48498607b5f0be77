// interop_torch_peer_test.cpp — scripts/torch_peer_bench.py, the tokens/s
// comparison against a PyTorch peer (docs/performance.md, "Against PyTorch"),
// on bench/tiny with the fewest steps, fp32 eager only, in the interop venv:
//   - the loss anchor: transformers' cross-entropy of the exported model on
//     the anchor batch equals the loss moetrain logged on it for the same
//     weights, within kLossTol relative, and that tolerance is far below what
//     one optimizer step changes (the anchor tells step 1's weights from the
//     initial ones);
//   - the export loaded with no missing or unexpected tensors, every MoE
//     block's router replaced by the balanced one;
//   - moetrain's and torch's tokens/s and their ratio are finite and positive.
// No timing is asserted. Without the venv the test fails: it never skips.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "support/e2e.h"

namespace mt::e2e {
namespace {

using nlohmann::json;

// fp32 on both sides, other summation orders: measured 2e-9 relative on bench/tiny.
constexpr double kLossTol = 1e-6;

bool finite_positive(const json& v) { return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() > 0; }

TEST(InteropTorchPeer, SameLossAndTokensPerSecondOnTiny) {
  std::string venv_error;
  const std::string py = interop_python(venv_error);
  ASSERT_FALSE(py.empty()) << venv_error;
  TempDir tmp;
  const auto r = run_process({py,
                              std::string(MT_SOURCE_DIR) + "/scripts/torch_peer_bench.py",
                              "--preset",
                              "tiny",
                              "--moetrain",
                              moetrain_binary(),
                              "--precisions",
                              "fp32",
                              "--modes",
                              "eager",
                              "--rounds",
                              "1",
                              "--steps",
                              "1",
                              "--warmup",
                              "0",
                              "--loss-tol",
                              std::to_string(kLossTol),
                              "--work",
                              tmp / "work",
                              "--json",
                              tmp / "peer.json"},
                             300, {"HF_HOME=" + tmp / "hf_home"});
  ASSERT_EQ(r.exit_code, 0) << r;
  const json out = json::parse(read_file(tmp / "peer.json"));

  EXPECT_EQ(out["architecture"], "MoetrainForCausalLM");
  EXPECT_EQ(out["balanced_routers"], 4);  // bench/tiny: 4 layers, all MoE
  const json& a = out["anchor"];
  for (const char* k : {"missing_keys", "unexpected_keys"}) EXPECT_TRUE(a[k].empty()) << k << a[k];
  const double mine = a["moetrain_loss"].get<double>(), theirs = a["torch_loss"].get<double>();
  const double step1 = a["moetrain_loss_step1"].get<double>();
  EXPECT_NEAR(theirs, mine, kLossTol * mine);
  EXPECT_GT(std::fabs(step1 - mine), 100 * kLossTol * mine) << "the anchor could not tell one step's update apart";
  EXPECT_TRUE(a["ok"].get<bool>());
  std::printf("# anchor: moetrain %.9f, transformers %.9f (step 1: %.9f)\n", mine, theirs, step1);

  ASSERT_EQ(out["rounds"].size(), 1u);
  const json& round = out["rounds"][0];
  EXPECT_EQ(round["precision"], "fp32");
  EXPECT_EQ(round["moetrain_routing"], "balanced");
  EXPECT_FALSE(round.contains("torch_eager_error")) << round;
  const json& s = out["summary"]["fp32"];
  for (const char* k : {"moetrain", "torch_eager", "ratio_eager"}) EXPECT_TRUE(finite_positive(s[k])) << k << s;
  EXPECT_FALSE(s.contains("torch_compile"));
  EXPECT_NEAR(s["ratio_eager"].get<double>(), s["moetrain"].get<double>() / s["torch_eager"].get<double>(), 1e-9);
  EXPECT_FALSE(out["cpu"]["model_name"].get<std::string>().empty());
}

}  // namespace
}  // namespace mt::e2e
