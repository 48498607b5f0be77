// isoflop.cpp — see isoflop.h.
#include "ladder/isoflop.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace mt::ladder {
namespace {

// Least squares y = c0 + c1 x in logs; fills k = exp(c0), exponent = c1.
PowerLaw fit_power_law(const std::vector<double>& log_c, const std::vector<double>& log_y) {
  const double m = double(log_c.size());
  double mx = 0, my = 0;
  for (size_t i = 0; i < log_c.size(); ++i) mx += log_c[i] / m, my += log_y[i] / m;
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < log_c.size(); ++i) {
    sxx += (log_c[i] - mx) * (log_c[i] - mx);
    sxy += (log_c[i] - mx) * (log_y[i] - my);
  }
  PowerLaw p;
  p.exponent = sxy / sxx;
  p.k = std::exp(my - p.exponent * mx);
  if (log_c.size() > 2) {
    double rss = 0;
    for (size_t i = 0; i < log_c.size(); ++i) {
      const double r = log_y[i] - (my + p.exponent * (log_c[i] - mx));
      rss += r * r;
    }
    p.exponent_se = std::sqrt(rss / (m - 2) / sxx);
  }
  return p;
}

// The minimum of a parabola through (log v, loss): false (with the reason) unless
// it opens upwards with its vertex inside the sampled range.
bool parabola_minimum(const std::vector<double>& log_v, const std::vector<double>& loss, double* log_v_opt,
                      double* loss_opt, std::string* why_not) {
  auto fail = [&](const char* why) {
    *why_not = why;
    return false;
  };
  // Centred x keeps the normal equations well conditioned (log N is ~20).
  double mean = 0;
  for (double v : log_v) mean += v / double(log_v.size());
  std::vector<double> x;
  for (double v : log_v) x.push_back(v - mean);
  double c[3];
  if (!fit_parabola(x, loss, c)) return fail("singular parabola fit");
  if (!(c[2] > 0)) return fail("the loss is not convex in log N (or log D) on this curve");
  const double xv = -c[1] / (2 * c[2]);
  auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  if (xv < *lo || xv > *hi) return fail("the minimum lies outside the sampled sizes (it would extrapolate)");
  *log_v_opt = xv + mean;
  *loss_opt = c[0] + c[1] * xv + c[2] * xv * xv;
  return true;
}

}  // namespace

double PowerLaw::at(double C) const { return k * std::pow(C, exponent); }

bool fit_parabola(const std::vector<double>& x, const std::vector<double>& y, double c[3]) {
  if (std::set<double>(x.begin(), x.end()).size() < 3) return false;
  // Normal equations M c = v with M_jk = sum x^(j+k), v_j = sum x^j y.
  double M[3][4] = {};
  for (size_t i = 0; i < x.size(); ++i) {
    const double p[3] = {1, x[i], x[i] * x[i]};
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 3; ++k) M[j][k] += p[j] * p[k];
      M[j][3] += p[j] * y[i];
    }
  }
  for (int col = 0; col < 3; ++col) {  // Gaussian elimination, partial pivoting
    int piv = col;
    for (int r = col + 1; r < 3; ++r)
      if (std::fabs(M[r][col]) > std::fabs(M[piv][col])) piv = r;
    if (std::fabs(M[piv][col]) < 1e-300) return false;
    std::swap(M[piv], M[col]);
    for (int r = 0; r < 3; ++r) {
      if (r == col) continue;
      const double f = M[r][col] / M[col][col];
      for (int k = col; k < 4; ++k) M[r][k] -= f * M[col][k];
    }
  }
  for (int j = 0; j < 3; ++j) c[j] = M[j][3] / M[j][j];
  return std::isfinite(c[0]) && std::isfinite(c[1]) && std::isfinite(c[2]);
}

IsoflopFit fit_isoflop(const std::vector<Run>& runs, ParamCount n, const IsoflopOptions& opt) {
  IsoflopFit fit;
  std::map<std::string, std::vector<int64_t>> groups;
  int64_t unlabelled = 0;
  for (int64_t i = 0; i < int64_t(runs.size()); ++i) {
    if (runs[i].budget.empty())
      ++unlabelled;
    else
      groups[runs[i].budget].push_back(i);
  }
  for (const auto& [label, idx] : groups) {
    BudgetCurve b;
    b.label = label;
    b.runs = int64_t(idx.size());
    double log_c = 0;
    std::vector<double> log_n, log_d, loss;
    for (int64_t i : idx) {
      const Run& r = runs[i];
      log_c += std::log(r.flops) / double(idx.size());
      log_n.push_back(std::log(n == ParamCount::kActive ? r.active_params : r.total_params));
      log_d.push_back(std::log(r.tokens));
      loss.push_back(r.loss);
    }
    b.flops = std::exp(log_c);
    double log_n_opt = 0, log_d_opt = 0, unused = 0;
    if (int64_t(std::set<double>(log_n.begin(), log_n.end()).size()) < opt.min_runs_per_budget) {
      b.why_not = fmt::format("fewer than {} distinct model sizes", opt.min_runs_per_budget);
    } else if (parabola_minimum(log_n, loss, &log_n_opt, &b.loss_at_n_opt, &b.why_not) &&
               parabola_minimum(log_d, loss, &log_d_opt, &unused, &b.why_not)) {
      b.used = true;
      b.n_opt = std::exp(log_n_opt);
      b.d_opt = std::exp(log_d_opt);
    }
    fit.budgets.push_back(b);
  }
  std::stable_sort(fit.budgets.begin(), fit.budgets.end(),
                   [](const BudgetCurve& a, const BudgetCurve& b) { return a.flops < b.flops; });

  std::vector<double> log_c, log_n, log_d;
  for (const BudgetCurve& b : fit.budgets) {
    if (!b.used) continue;
    log_c.push_back(std::log(b.flops));
    log_n.push_back(std::log(b.n_opt));
    log_d.push_back(std::log(b.d_opt));
  }
  fit.budgets_used = int64_t(log_c.size());
  if (fit.budgets_used < std::max<int64_t>(opt.min_budgets, 2)) {
    fit.why_not = fmt::format("{} isoFLOP budget(s) with an interior minimum, need {}", fit.budgets_used,
                              std::max<int64_t>(opt.min_budgets, 2));
    if (unlabelled > 0) fit.why_not += fmt::format(" ({} run(s) carry no 'budget' label)", unlabelled);
    return fit;
  }
  if (std::set<double>(log_c.begin(), log_c.end()).size() < 2) {
    fit.why_not = "every isoFLOP budget has the same compute";
    return fit;
  }
  fit.n_opt = fit_power_law(log_c, log_n);
  fit.d_opt = fit_power_law(log_c, log_d);
  fit.fitted = true;
  return fit;
}

}  // namespace mt::ladder
