// xgboost_regressor.cpp — see xgboost_regressor.h.
#include "mix/xgboost_regressor.h"

#include <xgboost/c_api.h>

#include <cmath>
#include <numeric>

#include "core/check.h"

namespace mt::mix {
namespace {

Status xgb(int rc, const char* what) {
  if (rc == 0) return Status::ok();
  return Status::errorf("XGBoost {}: {}", what, XGBGetLastError());
}

struct DMatrixDeleter {
  void operator()(void* h) const { XGDMatrixFree(h); }
};
using DMatrixPtr = std::unique_ptr<void, DMatrixDeleter>;

// Rows of doubles as XGBoost's dense float matrix. Weights in [0, 1] lose
// nothing that matters in float; the trees split on float thresholds anyway.
Result<DMatrixPtr> dense_matrix(const std::vector<std::vector<double>>& X, int64_t m) {
  std::vector<float> flat(X.size() * size_t(m));
  for (size_t k = 0; k < X.size(); ++k) {
    MT_CHECK(int64_t(X[k].size()) == m, "row {} has {} weights, the fit {}", k, X[k].size(), m);
    for (int64_t i = 0; i < m; ++i) flat[k * size_t(m) + size_t(i)] = float(X[k][size_t(i)]);
  }
  DMatrixHandle h = nullptr;
  Status s = xgb(XGDMatrixCreateFromMat_omp(flat.data(), bst_ulong(X.size()), bst_ulong(m), NAN, &h, 1),
                 "creating a DMatrix");
  if (!s) return s;
  return DMatrixPtr(h);
}

}  // namespace

void XGBoostRegressor::BoosterDeleter::operator()(void* handle) const { XGBoosterFree(handle); }

XGBoostRegressor::XGBoostRegressor(XGBoostOptions opt) : opt_(opt) {
  MT_CHECK(opt_.rounds > 0 && opt_.max_depth > 0 && opt_.eta > 0, "rounds {}, max_depth {}, eta {}", opt_.rounds,
           opt_.max_depth, opt_.eta);
}
XGBoostRegressor::~XGBoostRegressor() = default;
XGBoostRegressor::XGBoostRegressor(XGBoostRegressor&&) noexcept = default;
XGBoostRegressor& XGBoostRegressor::operator=(XGBoostRegressor&&) noexcept = default;

Status XGBoostRegressor::fit(const std::vector<std::vector<double>>& X, const std::vector<double>& y) {
  MT_RETURN_IF_ERROR(check_training_data(X, y));
  const int64_t m = int64_t(X[0].size());
  Result<DMatrixPtr> train = dense_matrix(X, m);
  if (!train) return train.status();
  const std::vector<float> label(y.begin(), y.end());
  MT_RETURN_IF_ERROR(xgb(XGDMatrixSetFloatInfo(train->get(), "label", label.data(), bst_ulong(label.size())),
                         "setting labels"));
  DMatrixHandle dtrain = train->get();
  BoosterHandle h = nullptr;
  MT_RETURN_IF_ERROR(xgb(XGBoosterCreate(&dtrain, 1, &h), "creating a booster"));
  std::unique_ptr<void, BoosterDeleter> booster(h);
  // base_score at the mean loss: the trees then model deviations from it,
  // instead of spending the first rounds climbing from XGBoost's default 0.5.
  const double mean = std::accumulate(y.begin(), y.end(), 0.0) / double(y.size());
  const std::pair<const char*, std::string> params[] = {
      {"objective", "reg:squarederror"},
      {"booster", "gbtree"},
      {"tree_method", "exact"},  // small data: exact splits, no histogram binning
      {"nthread", "1"},          // one thread: bitwise reproducible, and fits run side by side
      {"verbosity", "0"},
      {"seed", std::to_string(opt_.seed)},
      {"max_depth", std::to_string(opt_.max_depth)},
      {"eta", fmt::format("{}", opt_.eta)},
      {"subsample", fmt::format("{}", opt_.subsample)},
      {"colsample_bytree", fmt::format("{}", opt_.colsample_bytree)},
      {"min_child_weight", fmt::format("{}", opt_.min_child_weight)},
      {"lambda", fmt::format("{}", opt_.lambda)},
      {"base_score", fmt::format("{}", mean)},
  };
  for (const auto& [key, value] : params)
    MT_RETURN_IF_ERROR(xgb(XGBoosterSetParam(booster.get(), key, value.c_str()), key));
  for (int64_t r = 0; r < opt_.rounds; ++r)
    MT_RETURN_IF_ERROR(xgb(XGBoosterUpdateOneIter(booster.get(), int(r), dtrain), "boosting"));
  booster_ = std::move(booster);
  features_ = m;
  return Status::ok();
}

Result<std::vector<double>> XGBoostRegressor::try_predict_batch(const std::vector<std::vector<double>>& X) const {
  MT_CHECK(booster_ != nullptr, "predict before fit");
  if (X.empty()) return std::vector<double>{};
  Result<DMatrixPtr> dm = dense_matrix(X, features_);
  if (!dm) return dm.status();
  bst_ulong len = 0;
  const float* out = nullptr;
  // XGBoost owns `out` (per thread) until this thread's next call: copy now.
  Status s = xgb(XGBoosterPredict(booster_.get(), dm->get(), 0, 0, 0, &len, &out), "predicting");
  if (!s) return s;
  MT_CHECK(len == X.size(), "XGBoost returned {} predictions for {} rows", len, X.size());
  return std::vector<double>(out, out + len);
}

std::vector<double> XGBoostRegressor::predict_batch(const std::vector<std::vector<double>>& X) const {
  Result<std::vector<double>> r = try_predict_batch(X);
  // A fitted booster predicting a well-formed matrix has nothing a user can
  // get wrong; a failure here is an XGBoost bug or out of memory.
  MT_CHECK(r.is_ok(), "{}", r.status().message());
  return std::move(r.value());
}

double XGBoostRegressor::predict(const std::vector<double>& x) const { return predict_batch({x})[0]; }

std::string xgboost_version() {
  int major = 0, minor = 0, patch = 0;
  XGBoostVersion(&major, &minor, &patch);
  return fmt::format("{}.{}.{}", major, minor, patch);
}

}  // namespace mt::mix
