// regressor.h — a model from mixture weights (one row per proxy run, one
// column per bucket or domain) to one held-out loss: the part of the mixture
// search that RegMix (Liu et al. 2024) and Olmix swap between. fit() returns a
// Status for anything the data can cause (sizes, non-finite values, too few
// runs); predict() on an unfitted model or a wrong-sized x is a bug (MT_CHECK).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace mt::mix {

class Regressor {
 public:
  virtual ~Regressor();
  // X: K rows of m weights; y: K losses.
  virtual Status fit(const std::vector<std::vector<double>>& X, const std::vector<double>& y) = 0;
  virtual double predict(const std::vector<double>& x) const = 0;
  // predict() for every row; overridden where one call per row is slow.
  virtual std::vector<double> predict_batch(const std::vector<std::vector<double>>& X) const;
  virtual std::string name() const = 0;
};

enum class RegressorKind {
  kLogLinear,  // the data mixing law, loglinear.h
  kXGBoost,    // gradient-boosted trees, xgboost_regressor.h
};

// "loglinear" / "xgboost", as config files spell them.
std::string regressor_kind_name(RegressorKind kind);
Result<RegressorKind> parse_regressor_kind(const std::string& name);

// A regressor with its default options; seed feeds whatever randomness it has.
std::unique_ptr<Regressor> make_regressor(RegressorKind kind, uint64_t seed);

// The checks every fit starts with: at least 2 rows, all of one width m >= 1,
// y of the same length, every value finite.
Status check_training_data(const std::vector<std::vector<double>>& X, const std::vector<double>& y);

}  // namespace mt::mix
