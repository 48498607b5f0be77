// xgboost_regressor.h — gradient-boosted regression trees through XGBoost's C
// API, the nonlinear regressor of the mixture search (RegMix, Liu et al.
// 2024, used LightGBM; XGBoost is the same family and packaged by Debian).
// Deterministic: one thread, exact split finding, no row or column sampling
// unless asked, a fixed seed; two fits of the same data give the same bits.
// The only file that includes <xgboost/c_api.h>. Fits of different objects
// may run on different threads (TargetModel does); predict on one object from
// one thread at a time (XGBoost 1.7 keeps its output buffer per booster and thread).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mix/regressor.h"

namespace mt::mix {

// Small-data defaults: proxies number in the tens to hundreds, so shallow
// trees and a small learning rate with a few hundred rounds.
struct XGBoostOptions {
  int64_t rounds = 300;          // boosting rounds (trees)
  int64_t max_depth = 3;         // per tree
  double eta = 0.05;             // learning rate
  double subsample = 1.0;        // row fraction per tree (1: no sampling)
  double colsample_bytree = 1.0; // column fraction per tree
  double min_child_weight = 1.0; // minimum hessian (rows, for squared error) per leaf
  double lambda = 1.0;           // L2 on leaf values
  uint64_t seed = 0;             // XGBoost's seed (only used when sampling)
};

class XGBoostRegressor : public Regressor {
 public:
  explicit XGBoostRegressor(XGBoostOptions opt = {});
  ~XGBoostRegressor() override;
  XGBoostRegressor(XGBoostRegressor&&) noexcept;
  XGBoostRegressor& operator=(XGBoostRegressor&&) noexcept;
  XGBoostRegressor(const XGBoostRegressor&) = delete;
  XGBoostRegressor& operator=(const XGBoostRegressor&) = delete;

  Status fit(const std::vector<std::vector<double>>& X, const std::vector<double>& y) override;
  double predict(const std::vector<double>& x) const override;
  // All rows through one DMatrix (a few thousand rows per call is cheap; one
  // call per row costs a DMatrix each).
  std::vector<double> predict_batch(const std::vector<std::vector<double>>& X) const override;
  std::string name() const override { return "xgboost"; }

  // Same as predict_batch, with a Status for an XGBoost failure instead of an abort.
  Result<std::vector<double>> try_predict_batch(const std::vector<std::vector<double>>& X) const;

 private:
  struct BoosterDeleter {
    void operator()(void* handle) const;
  };
  XGBoostOptions opt_;
  int64_t features_ = 0;
  std::unique_ptr<void, BoosterDeleter> booster_;  // BoosterHandle, set by a successful fit
};

// XGBoost's version, "major.minor.patch", for reports.
std::string xgboost_version();

}  // namespace mt::mix
