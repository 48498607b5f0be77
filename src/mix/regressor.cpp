// regressor.cpp — see regressor.h.
#include "mix/regressor.h"

#include <cmath>

#include "mix/loglinear.h"
#include "mix/xgboost_regressor.h"

namespace mt::mix {

Regressor::~Regressor() = default;

std::vector<double> Regressor::predict_batch(const std::vector<std::vector<double>>& X) const {
  std::vector<double> out(X.size());
  for (size_t k = 0; k < X.size(); ++k) out[k] = predict(X[k]);
  return out;
}

std::string regressor_kind_name(RegressorKind kind) {
  switch (kind) {
    case RegressorKind::kLogLinear:
      return "loglinear";
    case RegressorKind::kXGBoost:
      return "xgboost";
  }
  return "?";
}

Result<RegressorKind> parse_regressor_kind(const std::string& name) {
  if (name == "loglinear") return RegressorKind::kLogLinear;
  if (name == "xgboost") return RegressorKind::kXGBoost;
  return Status::errorf("unknown regressor '{}' (expected 'loglinear' or 'xgboost')", name);
}

std::unique_ptr<Regressor> make_regressor(RegressorKind kind, uint64_t seed) {
  switch (kind) {
    case RegressorKind::kLogLinear:
      return std::make_unique<LogLinearRegressor>();  // deterministic starts: no seed needed
    case RegressorKind::kXGBoost: {
      XGBoostOptions opt;
      opt.seed = seed;
      return std::make_unique<XGBoostRegressor>(opt);
    }
  }
  return nullptr;
}

Status check_training_data(const std::vector<std::vector<double>>& X, const std::vector<double>& y) {
  if (X.size() < 2) return Status::errorf("fitting needs at least 2 runs, got {}", X.size());
  if (y.size() != X.size()) return Status::errorf("{} mixtures but {} losses", X.size(), y.size());
  const size_t m = X[0].size();
  if (m == 0) return Status::error("mixtures have no weights");
  for (size_t k = 0; k < X.size(); ++k) {
    if (X[k].size() != m) return Status::errorf("run {} has {} weights, run 0 has {}", k, X[k].size(), m);
    for (size_t i = 0; i < m; ++i)
      if (!std::isfinite(X[k][i])) return Status::errorf("run {}: weight {} is {}", k, i, X[k][i]);
    if (!std::isfinite(y[k])) return Status::errorf("run {}: loss is {}", k, y[k]);
  }
  return Status::ok();
}

}  // namespace mt::mix
