// gp.cpp — see gp.h.
#include "sweep/gp.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/check.h"
#include "core/minimize.h"

namespace mt {
namespace {

constexpr double kSqrt5 = 2.23606797749979;
constexpr double kLog2Pi = 1.8378770664093453;
// Log-normal priors on the signal and noise variances (standardised units).
constexpr double kLogS2Mean = 0.0, kLogS2Sd = 1.0;
constexpr double kLogN2Mean = -4.0, kLogN2Sd = 3.0;

struct Kernel {
  std::vector<double> inv_l2;  // 1 / l_i^2
  double s2 = 1, n2 = 1e-6;
};

Kernel kernel_of(const std::vector<double>& theta, size_t d, double min_noise) {
  Kernel k;
  for (size_t i = 0; i < d; ++i) k.inv_l2.push_back(std::exp(-2.0 * theta[i]));
  k.s2 = std::exp(theta[d]);
  k.n2 = std::exp(theta[d + 1]) + min_noise;
  return k;
}

double r2(const Kernel& k, const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]) * k.inv_l2[i];
  return s;
}

double matern52(double s2, double r) { return s2 * (1.0 + kSqrt5 * r + 5.0 * r * r / 3.0) * std::exp(-kSqrt5 * r); }

double log_normal_prior(double x, double mean, double sd, double* dx) {
  const double z = (x - mean) / sd;
  if (dx) *dx = -z / sd;
  return -0.5 * z * z;
}

}  // namespace

double gp_log_posterior(const std::vector<std::vector<double>>& X, const std::vector<double>& y,
                        const std::vector<double>& theta, const GpOptions& opt, std::vector<double>* grad) {
  const size_t n = X.size(), d = X.empty() ? 0 : X[0].size();
  MT_CHECK(theta.size() == d + 2, "theta has {} values for {} inputs", theta.size(), d);
  const Kernel k = kernel_of(theta, d, opt.min_noise);
  Eigen::MatrixXd K(n, n);
  Eigen::MatrixXd R(n, n);  // r between points
  for (size_t a = 0; a < n; ++a)
    for (size_t b = 0; b <= a; ++b) {
      const double r = std::sqrt(r2(k, X[a], X[b]));
      R(a, b) = R(b, a) = r;
      K(a, b) = K(b, a) = matern52(k.s2, r);
    }
  K.diagonal().array() += k.n2;
  Eigen::LLT<Eigen::MatrixXd> llt(K);
  if (llt.info() != Eigen::Success) {
    if (grad) std::fill(grad->begin(), grad->end(), 0.0);
    return -1e30;
  }
  const Eigen::Map<const Eigen::VectorXd> yv(y.data(), Eigen::Index(n));
  const Eigen::VectorXd alpha = llt.solve(yv);
  const Eigen::MatrixXd L = llt.matrixL();
  double lml = -0.5 * yv.dot(alpha) - L.diagonal().array().log().sum() - 0.5 * double(n) * kLog2Pi;
  std::vector<double> g(d + 2, 0.0);
  if (grad) {
    // d lml / d theta_j = 1/2 tr((alpha alpha^T - K^-1) dK/dtheta_j).
    const Eigen::MatrixXd W =
        alpha * alpha.transpose() - llt.solve(Eigen::MatrixXd::Identity(Eigen::Index(n), Eigen::Index(n)));
    for (size_t a = 0; a < n; ++a)
      for (size_t b = 0; b < n; ++b) {
        const double r = R(a, b);
        const double e = std::exp(-kSqrt5 * r);
        const double common = k.s2 * (5.0 / 3.0) * (1.0 + kSqrt5 * r) * e;  // times (dx_i / l_i)^2
        for (size_t i = 0; i < d; ++i) {
          const double dx = X[a][i] - X[b][i];
          g[i] += 0.5 * W(a, b) * common * dx * dx * k.inv_l2[i];
        }
        g[d] += 0.5 * W(a, b) * matern52(k.s2, r);  // d K / d log s2 = K without noise
      }
    g[d + 1] = 0.5 * W.trace() * (k.n2 - opt.min_noise);  // d n2 / d log n2
  }
  double dp = 0;
  for (size_t i = 0; i < d; ++i) {
    lml += log_normal_prior(theta[i], 0.0, opt.prior_log_l_sd, &dp);
    g[i] += dp;
  }
  lml += log_normal_prior(theta[d], kLogS2Mean, kLogS2Sd, &dp);
  g[d] += dp;
  lml += log_normal_prior(theta[d + 1], kLogN2Mean, kLogN2Sd, &dp);
  g[d + 1] += dp;
  if (grad) *grad = g;
  return lml;
}

GaussianProcess GaussianProcess::fit(const std::vector<std::vector<double>>& X, const std::vector<double>& y,
                                     const GpOptions& opt) {
  MT_CHECK(!X.empty() && X.size() == y.size(), "a GP needs as many targets as inputs, at least one");
  for (double v : y) MT_CHECK(std::isfinite(v), "a GP target is not finite ({})", v);
  const size_t n = X.size(), d = X[0].size();
  GaussianProcess gp;
  gp.X_ = X;
  gp.y_mean_ = std::accumulate(y.begin(), y.end(), 0.0) / double(n);
  double var = 0;
  for (double v : y) var += (v - gp.y_mean_) * (v - gp.y_mean_);
  gp.y_scale_ = n > 1 && var > 0 ? std::sqrt(var / double(n)) : 1.0;
  std::vector<double> ys(n);
  for (size_t i = 0; i < n; ++i) ys[i] = (y[i] - gp.y_mean_) / gp.y_scale_;

  // Maximise the log posterior from a few starts; keep the best.
  std::vector<double> best;
  double best_f = -INFINITY;
  for (int s = 0; s < std::max(1, opt.restarts); ++s) {
    std::vector<double> theta(d + 2, 0.0);
    for (size_t i = 0; i < d; ++i) theta[i] = s == 0 ? 0.0 : (s % 2 ? -1.0 : 1.0) * 0.7 * double((s + 1) / 2);
    theta[d] = kLogS2Mean;
    theta[d + 1] = kLogN2Mean;
    MinimizeOptions mo;
    mo.max_iterations = 200;
    mo.rel_decrease = 1e-9;
    const auto neg = [&](const double* t, double* dt) {
      std::vector<double> tv(t, t + d + 2), g;
      const double f = gp_log_posterior(X, ys, tv, opt, &g);
      for (size_t j = 0; j < d + 2; ++j) dt[j] = -g[j];
      return -f;
    };
    minimize_lbfgs(neg, theta, mo);
    const double f = gp_log_posterior(X, ys, theta, opt, nullptr);
    if (best.empty() || f > best_f) {
      best_f = f;
      best = theta;
    }
  }
  gp.theta_ = best;
  gp.lml_ = best_f;
  gp.min_noise_ = opt.min_noise;
  // The factor and weights at the chosen hyperparameters.
  const Kernel k = kernel_of(best, d, opt.min_noise);
  Eigen::MatrixXd K(n, n);
  for (size_t a = 0; a < n; ++a)
    for (size_t b = 0; b <= a; ++b) K(a, b) = K(b, a) = matern52(k.s2, std::sqrt(r2(k, X[a], X[b])));
  K.diagonal().array() += k.n2;
  Eigen::LLT<Eigen::MatrixXd> llt(K);
  MT_CHECK(llt.info() == Eigen::Success, "GP kernel matrix is not positive definite at the fitted hyperparameters");
  const Eigen::VectorXd alpha = llt.solve(Eigen::Map<const Eigen::VectorXd>(ys.data(), Eigen::Index(n)));
  gp.alpha_.assign(alpha.data(), alpha.data() + n);
  const Eigen::MatrixXd L = llt.matrixL();
  gp.chol_.resize(n * n);
  for (size_t a = 0; a < n; ++a)
    for (size_t b = 0; b < n; ++b) gp.chol_[a * n + b] = L(Eigen::Index(a), Eigen::Index(b));
  return gp;
}

GpPrediction GaussianProcess::predict(const std::vector<double>& x) const {
  const size_t n = X_.size(), d = x.size();
  const Kernel k = kernel_of(theta_, d, 0.0);
  Eigen::VectorXd ks = Eigen::VectorXd::Zero(Eigen::Index(n));
  for (size_t a = 0; a < n; ++a) ks(Eigen::Index(a)) = matern52(k.s2, std::sqrt(r2(k, X_[a], x)));
  const Eigen::Map<const Eigen::VectorXd> alpha(alpha_.data(), Eigen::Index(n));
  const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> L(
      chol_.data(), Eigen::Index(n), Eigen::Index(n));
  const Eigen::VectorXd v = L.triangularView<Eigen::Lower>().solve(ks);
  GpPrediction p;
  p.mean = y_mean_ + y_scale_ * ks.dot(alpha);
  p.var = std::max(0.0, k.s2 - v.squaredNorm()) * y_scale_ * y_scale_;
  return p;
}

double GaussianProcess::noise_var() const {
  const size_t d = theta_.size() - 2;
  return (std::exp(theta_[d + 1]) + min_noise_) * y_scale_ * y_scale_;
}

}  // namespace mt
