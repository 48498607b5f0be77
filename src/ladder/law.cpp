// law.cpp — see law.h.
#include "ladder/law.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace mt::ladder {

const char* param_count_name(ParamCount p) { return p == ParamCount::kActive ? "active" : "total"; }

const char* sparsity_name(Sparsity s) {
  switch (s) {
    case Sparsity::kNone:
      return "none";
    case Sparsity::kTotalOverActive:
      return "total_over_active";
    case Sparsity::kExperts:
      return "n_experts";
  }
  return "?";
}

double law_loss(const Law& law, double N, double D, double G) {
  const double g = law.sparsity == Sparsity::kNone ? 1.0 : std::pow(G, law.gamma);
  return law.E + law.A / (std::pow(N, law.alpha) * g) + law.B / std::pow(D, law.beta);
}

Result<FitPoints> make_fit_points(const std::vector<Run>& runs, ParamCount n, Sparsity s) {
  FitPoints p;
  p.param_count = n;
  p.sparsity = s;
  if (s != Sparsity::kNone && n == ParamCount::kTotal)
    return Status::error(
        "the sparsity term is defined on active parameters (A / (N_active^alpha G^gamma)); use it with N = active");
  double g_min = INFINITY, g_max = 0;
  for (const Run& r : runs) {
    p.log_n.push_back(std::log(n == ParamCount::kActive ? r.active_params : r.total_params));
    p.log_d.push_back(std::log(r.tokens));
    p.log_loss.push_back(std::log(r.loss));
    p.names.push_back(r.name);
    if (s == Sparsity::kNone) continue;
    if (s == Sparsity::kExperts && r.n_experts <= 0)
      return Status::errorf("{}: run '{}' has no 'n_experts', which the sparsity term G = n_experts needs", r.where,
                            r.name);
    const double g = s == Sparsity::kExperts ? r.n_experts : r.total_params / r.active_params;
    g_min = std::min(g_min, g);
    g_max = std::max(g_max, g);
    p.log_g.push_back(std::log(g));
  }
  if (s != Sparsity::kNone && !(g_max > g_min * (1 + 1e-9)))
    return Status::errorf("the sparsity term needs runs with different G = {} (every run has G = {})",
                          s == Sparsity::kExperts ? "n_experts" : "total/active", g_min);
  return p;
}

FitPoints subset(const FitPoints& p, const std::vector<int64_t>& idx) {
  FitPoints q;
  q.param_count = p.param_count;
  q.sparsity = p.sparsity;
  for (int64_t i : idx) {
    MT_CHECK(i >= 0 && i < p.size(), "row {} of {}", i, p.size());
    q.log_n.push_back(p.log_n[i]);
    q.log_d.push_back(p.log_d[i]);
    q.log_loss.push_back(p.log_loss[i]);
    q.names.push_back(p.names[i]);
    if (!p.log_g.empty()) q.log_g.push_back(p.log_g[i]);
  }
  return q;
}

int law_param_count(Sparsity s) { return s == Sparsity::kNone ? kLawParams : kLawParamsSparse; }

Law law_from_x(const double* x, Sparsity s) {
  Law law;
  law.A = std::exp(x[0]);
  law.B = std::exp(x[1]);
  law.E = std::exp(x[2]);
  law.alpha = x[3];
  law.beta = x[4];
  law.sparsity = s;
  if (s != Sparsity::kNone) law.gamma = x[5];
  return law;
}

void law_to_x(const Law& law, double* x) {
  x[0] = std::log(law.A);
  x[1] = std::log(law.B);
  x[2] = std::log(law.E);
  x[3] = law.alpha;
  x[4] = law.beta;
  if (law.sparsity != Sparsity::kNone) x[5] = law.gamma;
}

}  // namespace mt::ladder
