// target_model.cpp — see target_model.h.
#include "mix/target_model.h"

#include <cmath>

#include "core/check.h"
#include "mix/loglinear.h"

namespace mt::mix {

Status TargetModel::fit(RegressorKind kind, const std::vector<std::vector<double>>& X,
                        const std::vector<std::vector<double>>& Y, const std::vector<double>& lambda, uint64_t seed) {
  if (Y.size() != X.size()) return Status::errorf("{} mixtures but {} rows of losses", X.size(), Y.size());
  if (X.empty()) return Status::error("no runs to fit");
  const size_t T = lambda.size();
  if (T == 0) return Status::error("no targets");
  double lambda_sum = 0;
  for (size_t t = 0; t < T; ++t) {
    if (!(lambda[t] >= 0) || !std::isfinite(lambda[t]))
      return Status::errorf("target {}: weight {} must be finite and >= 0", t, lambda[t]);
    lambda_sum += lambda[t];
  }
  if (lambda_sum <= 0) return Status::error("every target weight is 0");
  for (size_t k = 0; k < Y.size(); ++k)
    if (Y[k].size() != T) return Status::errorf("run {} has {} losses, expected {} (one per target)", k, Y[k].size(), T);

  std::vector<std::unique_ptr<Regressor>> f(T);
  std::vector<Status> status(T);
  // Columns are independent and each fit is single-threaded and seeded by its
  // column, so the result does not depend on the thread count.
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t t = 0; t < int64_t(T); ++t) {
    std::vector<double> y(Y.size());
    for (size_t k = 0; k < Y.size(); ++k) y[k] = Y[k][size_t(t)];
    f[size_t(t)] = make_regressor(kind, seed + uint64_t(t));
    status[size_t(t)] = f[size_t(t)]->fit(X, y);
  }
  for (size_t t = 0; t < T; ++t)
    if (!status[t]) return Status::errorf("target {}: {}", t, status[t].message());
  kind_ = kind;
  m_ = int64_t(X[0].size());
  f_ = std::move(f);
  lambda_ = lambda;
  return Status::ok();
}

Status TargetModel::fit_scalar(RegressorKind kind, const std::vector<std::vector<double>>& X,
                               const std::vector<double>& y, uint64_t seed) {
  if (y.size() != X.size()) return Status::errorf("{} mixtures but {} losses", X.size(), y.size());
  std::vector<std::vector<double>> Y(y.size());
  for (size_t k = 0; k < y.size(); ++k) Y[k] = {y[k]};
  return fit(kind, X, Y, {1.0}, seed);
}

double TargetModel::predict(const std::vector<double>& x) const {
  const std::vector<double> each = predict_each(x);
  double s = 0;
  for (size_t t = 0; t < each.size(); ++t) s += lambda_[t] * each[t];
  return s;
}

std::vector<double> TargetModel::predict_each(const std::vector<double>& x) const {
  MT_CHECK(fitted(), "predict before fit");
  std::vector<double> out(f_.size());
  for (size_t t = 0; t < f_.size(); ++t) out[t] = f_[t]->predict(x);
  return out;
}

std::vector<double> TargetModel::predict_batch(const std::vector<std::vector<double>>& X) const {
  MT_CHECK(fitted(), "predict before fit");
  std::vector<double> out(X.size(), 0.0);
  for (size_t t = 0; t < f_.size(); ++t) {
    if (lambda_[t] == 0) continue;
    const std::vector<double> p = f_[t]->predict_batch(X);
    for (size_t k = 0; k < X.size(); ++k) out[k] += lambda_[t] * p[k];
  }
  return out;
}

std::vector<double> TargetModel::gradient(const std::vector<double>& x) const {
  MT_CHECK(fitted(), "gradient before fit");
  MT_CHECK(kind_ == RegressorKind::kLogLinear, "gradient needs log-linear regressors, these are {}",
           regressor_kind_name(kind_));
  std::vector<double> g(x.size(), 0.0);
  for (size_t t = 0; t < f_.size(); ++t) {
    if (lambda_[t] == 0) continue;
    const std::vector<double> gt = static_cast<const LogLinearRegressor&>(*f_[t]).gradient(x);
    for (size_t i = 0; i < x.size(); ++i) g[i] += lambda_[t] * gt[i];
  }
  return g;
}

}  // namespace mt::mix
