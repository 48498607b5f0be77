// objective.cpp — see objective.h. Gradient: with t_k the three LSE terms and
// w_k = softmax(t)_k, d(pred)/d t_k = w_k and Huber'(r) = clamp(r, -delta, delta),
// so each run adds Huber'(r) * w_k * d t_k / d x to the gradient.
#include "ladder/objective.h"

#include <algorithm>
#include <cmath>

namespace mt::ladder {

double huber(double r, double delta) {
  const double ar = std::fabs(r);
  return ar <= delta ? 0.5 * r * r : delta * (ar - 0.5 * delta);
}

double law_objective(const FitPoints& p, const double* x, double delta, double* dx) {
  const bool sparse = p.sparsity != Sparsity::kNone;
  const int np = law_param_count(p.sparsity);
  const double a = x[0], b = x[1], e = x[2], alpha = x[3], beta = x[4], gamma = sparse ? x[5] : 0.0;
  double g[kLawParamsSparse] = {0, 0, 0, 0, 0, 0};
  double f = 0;
  for (int64_t i = 0; i < p.size(); ++i) {
    const double log_g = sparse ? p.log_g[i] : 0.0;
    const double t1 = a - alpha * p.log_n[i] - gamma * log_g;
    const double t2 = b - beta * p.log_d[i];
    const double t3 = e;
    const double m = std::max({t1, t2, t3});
    const double e1 = std::exp(t1 - m), e2 = std::exp(t2 - m), e3 = std::exp(t3 - m);
    const double s = e1 + e2 + e3;
    const double r = m + std::log(s) - p.log_loss[i];
    f += huber(r, delta);
    if (!dx) continue;
    const double dr = std::clamp(r, -delta, delta) / s;  // Huber'(r), with the softmax's 1/s folded in
    g[0] += dr * e1;
    g[1] += dr * e2;
    g[2] += dr * e3;
    g[3] -= dr * e1 * p.log_n[i];
    g[4] -= dr * e2 * p.log_d[i];
    g[5] -= dr * e1 * log_g;
  }
  if (dx)
    for (int k = 0; k < np; ++k) dx[k] = g[k];
  return f;
}

}  // namespace mt::ladder
