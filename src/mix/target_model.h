// target_model.h — the fitted objective of the mixture search: one regressor
// per target (a held-out loss column: a bucket's validation loss, a
// downstream proxy), combined as sum_t lambda_t f_t(w) (Olmix's weighted
// targets; RegMix uses one target). The search (search.h) minimises it.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/status.h"
#include "mix/regressor.h"

namespace mt::mix {

class TargetModel {
 public:
  // X: K mixtures of m weights; Y: K rows of T losses; lambda: T weights >= 0,
  // not all 0. Target t's regressor gets seed + t. Errors: shapes, non-finite
  // values, negative lambda, fewer than 2 runs, any column's fit failing
  // (the message names the column).
  Status fit(RegressorKind kind, const std::vector<std::vector<double>>& X, const std::vector<std::vector<double>>& Y,
             const std::vector<double>& lambda, uint64_t seed);
  // One target with weight 1.
  Status fit_scalar(RegressorKind kind, const std::vector<std::vector<double>>& X, const std::vector<double>& y,
                    uint64_t seed);

  // sum_t lambda_t f_t(x).
  double predict(const std::vector<double>& x) const;
  // f_t(x) for every target (unweighted).
  std::vector<double> predict_each(const std::vector<double>& x) const;
  // predict() for many rows, batched per regressor.
  std::vector<double> predict_batch(const std::vector<std::vector<double>>& X) const;
  // d predict / d x; log-linear models only (MT_CHECK).
  std::vector<double> gradient(const std::vector<double>& x) const;

  bool fitted() const { return !f_.empty(); }
  RegressorKind kind() const { return kind_; }
  int64_t targets() const { return int64_t(f_.size()); }
  int64_t weights() const { return m_; }  // m, the length of x
  const std::vector<double>& lambda() const { return lambda_; }
  const Regressor& regressor(int64_t t) const { return *f_[size_t(t)]; }

 private:
  RegressorKind kind_ = RegressorKind::kLogLinear;
  int64_t m_ = 0;
  std::vector<std::unique_ptr<Regressor>> f_;  // (T)
  std::vector<double> lambda_;                 // (T)
};

}  // namespace mt::mix
