// loglinear.h — the data mixing law of Ye et al. (2024, "Data Mixing Laws"),
// the regressor Olmix fits per target: loss(w) = c + exp(b + t . w), with w
// the mixture weights. The floor c is kept below the smallest observed loss
// (c = min(y) - exp(s)), so exp(...) is the reducible part and log(loss - c)
// is linear in w. Fitted by least squares on losses scaled by their standard
// deviation, plus a ridge on t scaled per weight by its spread across the runs
// (ridge * sum_i (sd(w_i) t_i)^2): it picks one t among the many that predict
// alike (t + a * 1 shifts b only, because weights sum to 1) and keeps K < m
// fits well posed. L-BFGS (core/minimize.h) runs from a few deterministic
// starts, each a ridge regression of log(y - c0) on w for one trial floor c0;
// the best objective wins (ties: the earlier start).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/minimize.h"
#include "mix/regressor.h"

namespace mt::mix {

struct LogLinearOptions {
  double ridge = -1;  // weight of ridge * sum_i (sd(w_i) t_i)^2; < 0: 1e-4 * K (K = runs), which is
                      // 1e-4 of the sum of squared standardised weights: small next to the data
  // Trial floors for the starts: c0 = min(y) - gap * sd(y), one start per gap.
  std::vector<double> start_gaps = {0.05, 0.3, 1.0, 4.0};
  MinimizeOptions tolerance{3000, 1e-10, 1e-14};
  // With no more runs than weights the law can fit them exactly, and does so
  // only in a limit (the floor c running off to -inf, where the law turns
  // linear: m identified parameters, an intercept and m - 1 slopes), so the
  // objective falls without end and every start would run to
  // the iteration limit (measured: 3000 iterations, 35 ms for 4 runs of 40
  // weights, 90 s of a 200-bucket search's 64 bootstrap refits). A start stops
  // once the objective per run is below this: residuals ~1e-3 of sd(y), far
  // inside seed noise (1 ms for the same fit). With more runs an exact fit,
  // if any, is a point, and the fit runs to the tolerance above.
  double exact_fit_per_run = 1e-6;
};

class LogLinearRegressor : public Regressor {
 public:
  explicit LogLinearRegressor(LogLinearOptions opt = {});
  Status fit(const std::vector<std::vector<double>>& X, const std::vector<double>& y) override;
  double predict(const std::vector<double>& x) const override;
  std::string name() const override { return "loglinear"; }

  // d predict / d x = exp(b + t . x) * t.
  std::vector<double> gradient(const std::vector<double>& x) const;

  // The fitted law (valid after a successful fit).
  double c() const { return c_; }
  double b() const { return b_; }
  const std::vector<double>& t() const { return t_; }
  double objective() const { return objective_; }  // scaled squared residuals + ridge at the optimum
  int lbfgs_code() const { return code_; }          // liblbfgs's code for the winning start
  bool reached_exact_fit() const { return exact_; }  // the winning start stopped at exact_fit_per_run

 private:
  LogLinearOptions opt_;
  bool fitted_ = false;
  double c_ = 0, b_ = 0;
  std::vector<double> t_;  // (m)
  double objective_ = 0;
  int code_ = 0;
  bool exact_ = false;
};

}  // namespace mt::mix
