// loglinear.cpp — see loglinear.h. Parameters in the minimiser's vector:
// x = (s, b, t_0 .. t_{m-1}) with c = min(y) - exp(s).
#include "mix/loglinear.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/check.h"

namespace mt::mix {
namespace {

// exp() of an exponent clipped below overflow: a wild line-search trial then
// costs a huge but finite objective, which the line search backs off from.
double safe_exp(double e) { return std::exp(std::min(e, 700.0)); }

double sd(const std::vector<double>& v) {
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / double(v.size()));
}

// Solves A z = rhs in place for symmetric positive definite A (n x n, row
// major) by Cholesky; A is overwritten with its factor.
void cholesky_solve(std::vector<double>& A, std::vector<double>& rhs, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    double d = A[j * n + j];
    for (int64_t k = 0; k < j; ++k) d -= A[j * n + k] * A[j * n + k];
    MT_CHECK(d > 0, "ridge normal equations not positive definite at column {} ({})", j, d);
    const double l = std::sqrt(d);
    A[j * n + j] = l;
    for (int64_t i = j + 1; i < n; ++i) {
      double s = A[i * n + j];
      for (int64_t k = 0; k < j; ++k) s -= A[i * n + k] * A[j * n + k];
      A[i * n + j] = s / l;
    }
  }
  for (int64_t i = 0; i < n; ++i) {  // L u = rhs
    double s = rhs[i];
    for (int64_t k = 0; k < i; ++k) s -= A[i * n + k] * rhs[k];
    rhs[i] = s / A[i * n + i];
  }
  for (int64_t i = n - 1; i >= 0; --i) {  // L^T z = u
    double s = rhs[i];
    for (int64_t k = i + 1; k < n; ++k) s -= A[k * n + i] * rhs[k];
    rhs[i] = s / A[i * n + i];
  }
}

// The fit works on standardised weights z_i = (w_i - mean_i) / sd_i, with
// exponent b' + u . z: raw weights of 200 buckets are ~1/200 each, so their
// coefficients would be ~10^4 times stiffer than b and L-BFGS would crawl
// (measured: 3000 iterations without converging). In these coordinates the
// ridge is plain ridge * |u|^2, and the direction t ~ 1 that weights summing
// to 1 cannot see is u ~ sd, with z . sd = 0: no data gradient ever points
// along it, so from a start orthogonal to it (the ridge regression below)
// the iterates stay orthogonal.
struct Problem {
  int64_t K, m;
  std::vector<double> Z;  // (K, m) standardised weights
  const std::vector<double>& y;
  double y_min, y_scale, ridge;

  // p = (s, b', u_0 .. u_{m-1}), c = y_min - exp(s).
  double value(const double* p, double* dp) const {
    const double gap = std::exp(p[0]), b = p[1];
    const double* u = p + 2;
    std::fill(dp, dp + m + 2, 0.0);
    double f = 0;
    for (int64_t k = 0; k < K; ++k) {
      const double* z = Z.data() + k * m;
      double e = b;
      for (int64_t i = 0; i < m; ++i) e += u[i] * z[i];
      const double ex = safe_exp(e);
      const double r = (y_min - gap + ex - y[size_t(k)]) / y_scale;
      f += r * r;
      const double g = 2 * r / y_scale;
      dp[0] -= g * gap;
      dp[1] += g * ex;
      for (int64_t i = 0; i < m; ++i) dp[2 + i] += g * ex * z[i];
    }
    for (int64_t i = 0; i < m; ++i) {
      f += ridge * u[i] * u[i];
      dp[2 + i] += 2 * ridge * u[i];
    }
    return f;
  }
};

}  // namespace

LogLinearRegressor::LogLinearRegressor(LogLinearOptions opt) : opt_(std::move(opt)) {
  MT_CHECK(!opt_.start_gaps.empty(), "no starts");
  for (double g : opt_.start_gaps) MT_CHECK(g > 0, "start gap {} must be positive", g);
}

Status LogLinearRegressor::fit(const std::vector<std::vector<double>>& X, const std::vector<double>& y) {
  MT_RETURN_IF_ERROR(check_training_data(X, y));
  const int64_t K = int64_t(X.size()), m = int64_t(X[0].size());
  const double y_sd = sd(y);
  // Equal losses: any scale works (the fit is the constant); 1 avoids 0/0.
  const double y_scale = y_sd > 0 ? y_sd : 1.0;
  Problem prob{K, m, std::vector<double>(static_cast<size_t>(K * m), 0.0), y, *std::min_element(y.begin(), y.end()),
               y_scale, opt_.ridge >= 0 ? opt_.ridge : 1e-4 * double(K)};
  std::vector<double> x_mean(static_cast<size_t>(m), 0.0), x_sd(static_cast<size_t>(m), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    std::vector<double> col(static_cast<size_t>(K));
    for (int64_t k = 0; k < K; ++k) col[size_t(k)] = X[size_t(k)][size_t(i)];
    x_mean[size_t(i)] = std::accumulate(col.begin(), col.end(), 0.0) / double(K);
    x_sd[size_t(i)] = sd(col);
    // A weight that never varies carries no information: z = 0, t_i = 0.
    if (x_sd[size_t(i)] > 0)
      for (int64_t k = 0; k < K; ++k) prob.Z[size_t(k * m + i)] = (col[size_t(k)] - x_mean[size_t(i)]) / x_sd[size_t(i)];
  }

  // Starts: for each trial floor c0, ridge regression of log(y - c0) on z.
  // The Gram matrix is the same for every floor; a jitter on its diagonal
  // keeps it positive definite when ridge = 0.
  std::vector<double> gram(static_cast<size_t>(m * m), 0.0);
  for (int64_t k = 0; k < K; ++k) {
    const double* z = prob.Z.data() + k * m;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j <= i; ++j) gram[size_t(i * m + j)] += z[i] * z[j];
  }
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = i + 1; j < m; ++j) gram[size_t(i * m + j)] = gram[size_t(j * m + i)];
    gram[size_t(i * m + i)] += prob.ridge + 1e-9 * double(K);
  }

  const MinimizeObjective objective = [&](const double* p, double* dp) { return prob.value(p, dp); };
  MinimizeOptions tolerance = opt_.tolerance;
  if (K <= m) tolerance.f_floor = opt_.exact_fit_per_run * double(K);
  double best = INFINITY;
  std::vector<double> best_p;
  for (double gap : opt_.start_gaps) {
    const double c0 = prob.y_min - gap * y_scale;
    std::vector<double> lz(static_cast<size_t>(K));
    for (int64_t k = 0; k < K; ++k) lz[size_t(k)] = std::log(y[size_t(k)] - c0);
    const double lz_mean = std::accumulate(lz.begin(), lz.end(), 0.0) / double(K);
    std::vector<double> rhs(static_cast<size_t>(m), 0.0);
    for (int64_t k = 0; k < K; ++k)
      for (int64_t i = 0; i < m; ++i) rhs[size_t(i)] += prob.Z[size_t(k * m + i)] * (lz[size_t(k)] - lz_mean);
    std::vector<double> a = gram;
    cholesky_solve(a, rhs, m);
    std::vector<double> p(static_cast<size_t>(m + 2));
    p[0] = std::log(gap * y_scale);
    p[1] = lz_mean;  // z is centred: the intercept is the mean
    std::copy(rhs.begin(), rhs.end(), p.begin() + 2);
    const MinimizeResult r = minimize_lbfgs(objective, p, tolerance);
    if (std::isfinite(r.f) && r.f < best) {
      best = r.f;
      best_p = p;
      code_ = r.code;
      exact_ = r.reached_floor;
    }
  }
  if (best_p.empty()) return Status::error("log-linear fit: every start ended at a non-finite objective");
  // Back to raw weights: u . z = sum_i t_i (w_i - mean_i), t_i = u_i / sd_i.
  c_ = prob.y_min - std::exp(best_p[0]);
  b_ = best_p[1];
  t_.assign(size_t(m), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    if (x_sd[size_t(i)] == 0) continue;
    t_[size_t(i)] = best_p[size_t(2 + i)] / x_sd[size_t(i)];
    b_ -= t_[size_t(i)] * x_mean[size_t(i)];
  }
  objective_ = best;
  fitted_ = true;
  return Status::ok();
}

double LogLinearRegressor::predict(const std::vector<double>& x) const {
  MT_CHECK(fitted_, "predict before fit");
  MT_CHECK(x.size() == t_.size(), "x has {} weights, the fit {}", x.size(), t_.size());
  double e = b_;
  for (size_t i = 0; i < x.size(); ++i) e += t_[i] * x[i];
  return c_ + std::exp(e);
}

std::vector<double> LogLinearRegressor::gradient(const std::vector<double>& x) const {
  MT_CHECK(fitted_, "gradient before fit");
  MT_CHECK(x.size() == t_.size(), "x has {} weights, the fit {}", x.size(), t_.size());
  double e = b_;
  for (size_t i = 0; i < x.size(); ++i) e += t_[i] * x[i];
  const double ex = std::exp(e);
  std::vector<double> g(t_.size());
  for (size_t i = 0; i < t_.size(); ++i) g[i] = ex * t_[i];
  return g;
}

}  // namespace mt::mix
