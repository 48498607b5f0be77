// ladder_chinchilla_test.cpp — golden: the law fit reproduces Besiroglu et
// al. (2024), "Chinchilla Scaling: A replication attempt", on the data they
// extracted from Hoffmann et al. (2022), Figure 4 (shared/reference/chinchilla):
// drop the 5 highest-loss runs (240 remain), Huber delta 1e-3, L-BFGS from
// the 4500-point grid. E, alpha and beta must land within one published
// standard error, and the compute-optimal tokens per parameter at
// Chinchilla's budget near 18. A and B are not compared: the objective is
// flat along them (published SEs 125 and 1293). A missing file fails.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "ladder/analysis.h"

namespace mt::ladder {
namespace {

const std::string kData = MT_SOURCE_DIR "/../shared/reference/chinchilla/svg_extracted_data.csv";

TEST(LadderChinchilla, ReproducesBesiroglu2024) {
  ASSERT_TRUE(std::filesystem::is_regular_file(kData)) << kData << " is missing (CI always has ../shared)";
  auto runs = load_results(kData);
  ASSERT_TRUE(runs) << runs.status().message();
  ASSERT_EQ(runs->size(), 245u);

  LadderOptions opt;
  opt.drop_highest_loss = 5;
  opt.fit.huber_delta = 1e-3;
  opt.bootstrap = {40, 0, 0.95};  // modest B for test time; docs/ladder.md reports B = 1000
  opt.target.flops = 5.76e23;     // Chinchilla's budget
  auto a = analyze(*runs, opt);
  ASSERT_TRUE(a) << a.status().message();
  EXPECT_EQ(a->used.size(), 240u);
  EXPECT_EQ(a->fit.starts, 4500);

  const Law& law = a->fit.law;
  // Besiroglu et al. (2024), Table 1: value, SE.
  EXPECT_NEAR(law.E, 1.8172, 0.03);
  EXPECT_NEAR(law.alpha, 0.3478, 0.02);
  EXPECT_NEAR(law.beta, 0.3658, 0.02);
  const double ratio = a->projection.compute_optimal->tokens_per_param.value;
  EXPECT_GT(ratio, 15.0);
  EXPECT_LT(ratio, 21.0);

  // The bootstrap errors are of the published size (their SEs: E 0.03, alpha 0.02, beta 0.02).
  for (auto [name, e, published] :
       {std::tuple{"E", a->estimates.E, 0.03}, std::tuple{"alpha", a->estimates.alpha, 0.02},
        std::tuple{"beta", a->estimates.beta, 0.02}}) {
    EXPECT_EQ(e.resamples, 40) << name;
    EXPECT_GT(e.se, published / 3) << name;
    EXPECT_LT(e.se, published * 3) << name;
  }
  RecordProperty("E", std::to_string(law.E));
  RecordProperty("alpha", std::to_string(law.alpha));
  RecordProperty("beta", std::to_string(law.beta));
  RecordProperty("tokens_per_param", std::to_string(ratio));
}

}  // namespace
}  // namespace mt::ladder
