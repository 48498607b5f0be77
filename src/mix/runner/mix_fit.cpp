// mix_fit.cpp — see mix_fit.h.
#include "mix/runner/mix_fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/file_io.h"
#include "mix/rank.h"
#include "mix/search.h"
#include "mix/target_model.h"
#include "rundir/metrics_log.h"
#include "train/post_eval.h"
#include "train/trainer.h"
#include "mix/runner/mix_records.h"

namespace mt {
using json = nlohmann::json;

namespace {

// Regressor fits on the fitted proxies, checked on the held-out ones.
json check_regressors(const MixSearchConfig& c, const MixSpace& s, const std::vector<json>& proxies,
                      const std::vector<std::vector<double>>& X, const std::vector<std::vector<double>>& Y,
                      const std::vector<double>& lambda) {
  const size_t fit_n = size_t(c.proxies - c.holdout);
  std::vector<std::vector<double>> Xf(X.begin(), X.begin() + std::ptrdiff_t(fit_n)),
      Yf(Y.begin(), Y.begin() + std::ptrdiff_t(fit_n));
  std::vector<std::vector<double>> Xh(X.begin() + std::ptrdiff_t(fit_n), X.end());
  std::vector<double> actual;
  for (size_t k = fit_n; k < proxies.size(); ++k) actual.push_back(proxies[k]["target"].get<double>());
  json out = json::object();
  for (const std::string kind_name : {"loglinear", "xgboost"}) {
    const mix::RegressorKind kind = mix::parse_regressor_kind(kind_name).value();
    mix::TargetModel m;
    Status st = m.fit(kind, Xf, Yf, lambda, c.seed);
    json r;
    if (!st) {
      r["error"] = st.message();
      out[kind_name] = r;
      continue;
    }
    const std::vector<double> pred = m.predict_batch(Xh);
    double mae = 0;
    for (size_t i = 0; i < pred.size(); ++i) mae += std::abs(pred[i] - actual[i]) / double(pred.size());
    const double rho = mix::spearman(pred, actual), r_p = mix::pearson(pred, actual);
    r["spearman"] = std::isfinite(rho) ? json(rho) : json();
    r["pearson"] = std::isfinite(r_p) ? json(r_p) : json();
    r["mean_abs_error"] = mae;
    r["predicted"] = pred;
    out[kind_name] = r;
  }
  out["actual"] = actual;
  (void)s;
  return out;
}

// "auto": the regressor with the better held-out rank correlation.
std::string chosen_regressor(const std::string& asked, const json& regressors) {
  if (asked != "auto") return asked;
  auto rho = [&](const char* k) {
    const json& r = regressors[k];
    return r.contains("spearman") && r["spearman"].is_number() ? r["spearman"].get<double>() : -2.0;
  };
  return rho("xgboost") > rho("loglinear") ? "xgboost" : "loglinear";
}

}  // namespace

// Checks both regressors on the held-out proxies (into result["regressors"]),
// fits the chosen one on all of them and searches the simplex with it.
Result<FittedTarget> fit_target(const MixSearchConfig& c, const MixSpace& s, const std::vector<MixRun>& runs,
                                const std::vector<json>& proxies, json& result) {
  std::vector<std::vector<double>> X, Y;
  std::vector<double> lambda;
  for (const TargetTerm& t : s.terms) lambda.push_back(t.weight);
  for (size_t k = 0; k < proxies.size(); ++k) {
    X.push_back(runs[k].domain_w);
    std::vector<double> y;
    for (const TargetTerm& t : s.terms) y.push_back(term_value(t, proxies[k]));
    Y.push_back(std::move(y));
  }
  result["regressors"] = check_regressors(c, s, proxies, X, Y, lambda);
  FittedTarget f;
  f.chosen = chosen_regressor(c.regressor, result["regressors"]);
  result["regressor"] = f.chosen;
  auto kind = mix::parse_regressor_kind(f.chosen);
  if (!kind) return kind.status();
  MT_RETURN_IF_ERROR(f.model.fit(kind.value(), X, Y, lambda, c.seed));
  f.kind = kind.value();
  mix::SearchOptions so;
  so.candidates = c.candidates;
  so.top_k = c.top_k;
  so.concentration = c.concentration;
  so.seed = c.seed;
  so.choice = c.method == "optimum" ? mix::SearchChoice::kModelOptimum : mix::SearchChoice::kTopKAverage;
  f.best = mix::search_simplex(f.model, s.center, s.domain_cap, so);
  f.X = std::move(X);
  f.Y = std::move(Y);
  f.lambda = std::move(lambda);
  return f;
}

}  // namespace mt
