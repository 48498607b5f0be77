// gp.h — Gaussian-process regression, the surrogate of the hyperparameter
// sweep (sweep/carbs.h): a constant mean (the targets' mean) and an
// automatic-relevance-determination Matérn-5/2 kernel
//   k(x, x') = s2 (1 + sqrt5 r + 5 r^2 / 3) exp(-sqrt5 r),
//   r^2 = sum_i (x_i - x'_i)^2 / l_i^2,
// plus Gaussian noise n2 on the diagonal (Rasmussen & Williams 2006, 4.2 and
// 5.4). Hyperparameters theta = (log l_1..l_d, log s2, log n2) maximise the
// log marginal likelihood plus weak log-normal priors that keep them finite
// with few points, by L-BFGS (core/minimize.h) from several starts. Linear
// algebra: Eigen's Cholesky. Targets are standardised inside; predictions
// are in the caller's units.
#pragma once
#include <cstdint>
#include <vector>

namespace mt {

struct GpOptions {
  int restarts = 3;             // L-BFGS starts: the prior's mode, then shifted length scales
  double min_noise = 1e-6;      // floor on n2 (standardised units): keeps the Cholesky stable
  double prior_log_l_sd = 1.5;  // log-normal prior on length scales around 1 (inputs are in [0, 1]-ish units)
};

struct GpPrediction {
  double mean = 0, var = 0;  // of the latent function (noise not added)
};

class GaussianProcess {
 public:
  // X: n rows of d inputs; y: n targets. n >= 1.
  static GaussianProcess fit(const std::vector<std::vector<double>>& X, const std::vector<double>& y,
                             const GpOptions& opt = {});
  GpPrediction predict(const std::vector<double>& x) const;
  const std::vector<double>& theta() const { return theta_; }
  double log_marginal_likelihood() const { return lml_; }
  double noise_var() const;  // n2 in the caller's units

 private:
  std::vector<std::vector<double>> X_;
  std::vector<double> theta_, alpha_;
  std::vector<double> chol_;  // lower Cholesky factor of K + n2 I, row-major n x n
  double y_mean_ = 0, y_scale_ = 1, lml_ = 0, min_noise_ = 0;
};

// The objective the fit maximises (log marginal likelihood of the
// standardised targets plus the log priors) and its gradient in theta;
// exposed so tests check the gradient against finite differences.
double gp_log_posterior(const std::vector<std::vector<double>>& X, const std::vector<double>& y_standardised,
                        const std::vector<double>& theta, const GpOptions& opt, std::vector<double>* grad);

}  // namespace mt
