// model_param_count_test.cpp — model/param_count.h is the one parameter counter:
// total_params equals the layout the trainer builds (ParamLayout::total())
// and the planner's total (plan::model_stats) for every architecture the
// presets cover (GQA with sliding windows, MLA, MTP, gated-delta hybrids,
// latent MoE, untied heads), and stays finite for a config too large for
// int64 (the trainer's memory check refuses it with that figure).
#include "model/param_count.h"

#include <gtest/gtest.h>

#include "model/weights.h"
#include "plan/model_stats.h"
#include "train/run_config.h"

namespace mt {
namespace {

TEST(ParamCount, TotalIsTheLayoutsAndThePlannersForEveryPreset) {
  for (const char* name : {"tiny-test", "quickstart", "bench/tiny", "bench/dense-512", "bench/moe-512",
                           "bench/moe-1024", "bench/moe-512-mla", "bench/moe-512-mtp", "bench/moe-512-hybrid"}) {
    auto cfg = load_run_config(std::string(MT_SOURCE_DIR) + "/configs/" + name + ".toml", {});
    ASSERT_TRUE(cfg.is_ok()) << name << ": " << cfg.status().message();
    for (const std::vector<std::string>& sets : std::vector<std::vector<std::string>>{
             {}, {"model.tied_embeddings=false"}, {"model.d_latent=32", "model.moe_out_norm=true"}}) {
      auto c = load_run_config(std::string(MT_SOURCE_DIR) + "/configs/" + name + ".toml", sets);
      if (!c) continue;  // e.g. a latent on a dense preset
      ParamLayout layout;
      build_layout(c->model, layout);
      EXPECT_EQ(total_params(c->model), double(layout.total())) << name;
      EXPECT_EQ(plan::model_stats(c->model, c->train.seq_len).total, layout.total()) << name;
    }
  }
}

TEST(ParamCount, AModelTooLargeForInt64IsCountedFinitely) {
  ModelConfig c;
  c.vocab_size = 1 << 20;
  c.d_model = 1 << 20;
  c.n_layers = 1 << 20;
  c.n_heads = 1 << 10;
  c.n_kv_heads = 1 << 10;
  c.d_ff = 1 << 22;
  const double n = total_params(c);
  EXPECT_TRUE(std::isfinite(n));
  EXPECT_GT(n, 9.3e18);  // past INT64_MAX
}

}  // namespace
}  // namespace mt
