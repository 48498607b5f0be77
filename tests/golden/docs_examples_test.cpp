// docs_examples_test.cpp — the worked examples the docs quote from runs are
// the outputs scripts/doc-examples.sh recorded in docs/examples/ (the planner's
// example is checked by PlanCli.ThePlannerDocQuotesWhatPlanPrints, the
// ladder's measured section by LadderQuickstart.TheDocQuotesTheseResultsAndFits).
// A figure edited by hand, or outputs regenerated without the doc, fail here.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "core/file_io.h"

namespace mt {
namespace {

std::string read(const std::string& rel) {
  auto text = read_file(std::string(MT_SOURCE_DIR) + "/" + rel);
  EXPECT_TRUE(text.is_ok()) << text.status().message();
  return text.is_ok() ? text.value() : std::string();
}

TEST(DocsExamples, InferenceQuotesTheQuickstartEval) {
  const std::string out = read("docs/examples/quickstart-eval.txt");
  ASSERT_FALSE(out.empty());
  EXPECT_NE(read("docs/inference.md").find(out), std::string::npos)
      << "docs/inference.md no longer quotes docs/examples/quickstart-eval.txt:\n"
      << out;
}

TEST(DocsExamples, DataQuotesTheQuickstartDecontamination) {
  const std::string out = read("docs/examples/quickstart-decontaminate.txt");
  ASSERT_FALSE(out.empty());
  EXPECT_NE(read("docs/data.md").find(out), std::string::npos)
      << "docs/data.md no longer quotes docs/examples/quickstart-decontaminate.txt:\n"
      << out;
}

TEST(DocsExamples, TrainingQuotesTheAnnealingComparison) {
  const std::string doc = read("docs/training.md");
  for (const char* rel : {"docs/examples/anneal-plan-phases.txt", "docs/examples/anneal-eval.txt",
                          "docs/examples/anneal-natural-eval.txt"}) {
    const std::string out = read(rel);
    ASSERT_FALSE(out.empty()) << rel;
    EXPECT_NE(doc.find(out), std::string::npos) << "docs/training.md no longer quotes " << rel << ":\n" << out;
  }
}

TEST(DocsExamples, LadderQuotesTheDownstreamExample) {
  const std::string doc = read("docs/ladder.md");
  // The eval of r1 and the fitted sigmoid, line for line.
  const std::string eval = read("docs/examples/ladder-eval-r1.txt");
  ASSERT_FALSE(eval.empty());
  EXPECT_NE(doc.find(eval), std::string::npos) << "docs/ladder.md no longer quotes:\n" << eval;
  const std::string fit = read("docs/examples/ladder-fit.txt");
  const size_t at = fit.find("accuracy toy:");
  ASSERT_NE(at, std::string::npos) << fit;
  const std::string sigmoid = fit.substr(at, fit.find('\n', at) - at);
  EXPECT_NE(doc.find(sigmoid), std::string::npos) << "docs/ladder.md no longer quotes: " << sigmoid;
  // The first result's loss and accuracy, as the doc abridges the line.
  const nlohmann::json first = nlohmann::json::parse(read("docs/examples/ladder-first-result.jsonl"));
  for (const std::string& figure : {"\"loss\":" + first["loss"].dump(), "\"name\":" + first["name"].dump(),
                                    "\"accuracy\":{\"toy\":" + first["accuracy"]["toy"].dump() + "}"})
    EXPECT_NE(doc.find(figure), std::string::npos) << "docs/ladder.md no longer quotes " << figure;
}

TEST(DocsExamples, MixQuotesTheEvalExample) {
  const std::string doc = read("docs/mix.md");
  for (const char* rec : {"docs/examples/mix-eval-example.txt", "docs/examples/mix-eval-p003.txt"}) {
    const std::string out = read(rec);
    ASSERT_FALSE(out.empty()) << rec;
    EXPECT_NE(doc.find(out), std::string::npos) << "docs/mix.md no longer quotes " << rec << ":\n" << out;
  }
  // The target terms and p003's target, as the doc assembles it.
  const nlohmann::json j = nlohmann::json::parse(read("docs/examples/mix-eval-example.json"));
  std::string terms = "[";
  for (const nlohmann::json& t : j["target"])
    terms += std::string(terms.size() > 1 ? ",\n" : "") + "{\"name\": " + t["name"].dump() +
             ", \"weight\": " + fmt::format("{}", t["weight"].get<double>()) + "}";
  terms += "]";
  EXPECT_NE(doc.find(terms), std::string::npos) << "docs/mix.md no longer lists the terms " << terms;
  for (const nlohmann::json& p : j["proxies"])
    if (p["name"] == "p003")
      EXPECT_NE(doc.find(fmt::format("= {:.5f}", p["target"].get<double>())), std::string::npos)
          << "docs/mix.md no longer gives p003's target " << p["target"];
}

TEST(DocsExamples, MixQuotesTheQuickstartSearch) {
  const std::string doc = read("docs/mix.md");
  const std::string out = read("docs/examples/mix-quickstart.txt");
  ASSERT_FALSE(out.empty());
  EXPECT_NE(doc.find(out), std::string::npos) << "docs/mix.md no longer quotes:\n" << out;
  const nlohmann::json j = nlohmann::json::parse(read("docs/examples/mix-quickstart.json"));
  for (const auto& [label, key] : {std::pair{"log-linear", "loglinear"}, std::pair{"XGBoost", "xgboost"}}) {
    const nlohmann::json& r = j["regressors"][key];
    const std::string row = fmt::format("| {} | {:.2f} | {:.2f} | {:.3f} |", label, r["spearman"].get<double>(),
                                        r["pearson"].get<double>(), r["mean_abs_error"].get<double>());
    EXPECT_NE(doc.find(row), std::string::npos) << "docs/mix.md no longer has the row " << row;
  }
  for (double figure : {j["best"]["predicted"].get<double>(), j["natural_predicted"].get<double>(),
                        j["verify"]["best"]["actual"].get<double>(), j["verify"]["natural"]["actual"].get<double>()})
    EXPECT_NE(doc.find(fmt::format("{:.3f}", figure)), std::string::npos) << "docs/mix.md no longer gives " << figure;
  const nlohmann::json& t = j["transfer"];
  ASSERT_TRUE(t.is_object()) << "the recorded search has no scale transfer";
  for (const std::string& figure :
       {fmt::format("Spearman {:.3f}**", t["spearman"].get<double>()), fmt::format("{:.3f}", t["best"].get<double>()),
        fmt::format("{:.3f}", t["natural"].get<double>())})
    EXPECT_NE(doc.find(figure), std::string::npos) << "docs/mix.md no longer gives " << figure;
}

// The second measured search (scripts/mix-three-sources.sh): the log lines,
// the held-out rank correlations, the verified difference with its
// standard error, and the scale transfer.
TEST(DocsExamples, MixQuotesTheThreeSourceSearch) {
  const std::string doc = read("docs/mix.md");
  const std::string out = read("docs/examples/mix-three-sources.txt");
  ASSERT_FALSE(out.empty());
  EXPECT_NE(doc.find(out), std::string::npos) << "docs/mix.md no longer quotes:\n" << out;
  const nlohmann::json j = nlohmann::json::parse(read("docs/examples/mix-three-sources.json"));
  const nlohmann::json& d = j["verify"]["difference"];
  const nlohmann::json& t = j["transfer"];
  for (const std::string& figure :
       {fmt::format("{:.3f}", j["verify"]["best"]["actual"].get<double>()),
        fmt::format("{:.3f}", j["verify"]["natural"]["actual"].get<double>()),
        fmt::format("{:.3f} ± {:.3f}", -d["mean"].get<double>(), d["std_error"].get<double>()),
        fmt::format("Spearman {:.3f}**", t["spearman"].get<double>()), fmt::format("{:.3f}", t["best"].get<double>()),
        fmt::format("{:.3f}", t["natural"].get<double>())})
    EXPECT_NE(doc.find(figure), std::string::npos) << "docs/mix.md no longer gives " << figure;
  // What the section claims: the difference is more than twice its standard error.
  EXPECT_GT(-d["mean"].get<double>(), 2 * d["std_error"].get<double>());
}

}  // namespace
}  // namespace mt
