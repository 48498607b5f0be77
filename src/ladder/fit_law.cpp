// fit_law.cpp — see fit_law.h.
#include "ladder/fit_law.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "ladder/objective.h"

namespace mt::ladder {
namespace {

struct StartResult {
  std::vector<double> x;
  MinimizeResult r;
};

// L-BFGS from every start; independent, so parallel (serial when called from
// inside another parallel region, as the bootstrap does).
std::vector<StartResult> minimize_all(const FitPoints& p, const std::vector<std::vector<double>>& starts,
                                      const MinimizeOptions& tol, double delta) {
  const MinimizeObjective f = [&](const double* x, double* dx) { return law_objective(p, x, delta, dx); };
  std::vector<StartResult> results(starts.size());
#pragma omp parallel for schedule(dynamic, 8)
  for (int64_t i = 0; i < int64_t(starts.size()); ++i) {
    results[i].x = starts[i];
    results[i].r = minimize_lbfgs(f, results[i].x, tol);
  }
  return results;
}

bool same_optimum(const std::vector<double>& x, const std::vector<double>& y) {
  for (size_t k = 0; k < x.size(); ++k)
    if (std::fabs(x[k] - y[k]) > 1e-3 * (1 + std::fabs(x[k]))) return false;
  return true;
}

// Up to `keep` distinct optima, best first (ties: the earlier start).
std::vector<const StartResult*> distinct_best(const std::vector<StartResult>& results, int64_t keep) {
  std::vector<const StartResult*> order;
  for (const StartResult& s : results)
    if (std::isfinite(s.r.f)) order.push_back(&s);
  MT_CHECK(!order.empty(), "every one of {} starts ended at a non-finite objective", results.size());
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return a->r.f < b->r.f; });
  std::vector<const StartResult*> kept;
  for (const StartResult* s : order) {
    if (int64_t(kept.size()) >= std::max<int64_t>(1, keep)) break;
    if (std::none_of(kept.begin(), kept.end(), [&](const auto* k) { return same_optimum(k->x, s->x); }))
      kept.push_back(s);
  }
  return kept;
}

LawFit fit_from(const FitPoints& p, const std::vector<std::vector<double>>& starts, const FitOptions& opt) {
  const std::vector<StartResult> coarse = minimize_all(p, starts, opt.start_tolerance, opt.huber_delta);
  std::vector<std::vector<double>> to_polish;
  for (const StartResult* s : distinct_best(coarse, opt.keep_optima)) to_polish.push_back(s->x);
  const std::vector<StartResult> fine = minimize_all(p, to_polish, opt.polish_tolerance, opt.huber_delta);
  const std::vector<const StartResult*> best = distinct_best(fine, opt.keep_optima);

  LawFit fit;
  fit.points = p.size();
  fit.starts = int64_t(starts.size());
  for (const StartResult& s : coarse) fit.converged_starts += s.r.converged() ? 1 : 0;
  fit.law = law_from_x(best.front()->x.data(), p.sparsity);
  fit.objective = best.front()->r.f;
  fit.code = best.front()->r.code;
  for (const StartResult* s : best) fit.optima.push_back(law_from_x(s->x.data(), p.sparsity));
  return fit;
}

Status check_identifiable(const FitPoints& p) {
  const int np = law_param_count(p.sparsity);
  if (p.size() < np + 1)
    return Status::errorf("fitting L(N, D) with {} parameters needs at least {} runs, got {}", np, np + 1, p.size());
  auto spread = [](const std::vector<double>& v) {
    auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    return *hi - *lo;
  };
  if (spread(p.log_n) < 1e-6) return Status::error("every run has the same N: alpha cannot be fitted");
  if (spread(p.log_d) < 1e-6) return Status::error("every run has the same D (tokens): beta cannot be fitted");
  return Status::ok();
}

}  // namespace

Result<LawFit> fit_law(const FitPoints& p, const FitOptions& opt) {
  MT_RETURN_IF_ERROR(check_identifiable(p));
  if (!(opt.huber_delta > 0)) return Status::errorf("the Huber delta must be positive, got {}", opt.huber_delta);
  const bool sparse = p.sparsity != Sparsity::kNone;
  const std::vector<double> no_gamma = {0.0};
  const std::vector<double>& grid_gamma = sparse ? opt.grid_gamma : no_gamma;
  std::vector<std::vector<double>> starts;
  for (double a : opt.grid_a)
    for (double b : opt.grid_b)
      for (double e : opt.grid_e)
        for (double alpha : opt.grid_alpha)
          for (double beta : opt.grid_beta)
            for (double gamma : grid_gamma) {
              std::vector<double> x = {a, b, e, alpha, beta};
              if (sparse) x.push_back(gamma);
              starts.push_back(std::move(x));
            }
  MT_CHECK(!starts.empty(), "empty starting grid");
  return fit_from(p, starts, opt);
}

LawFit refit_law(const FitPoints& p, const std::vector<Law>& starts, const FitOptions& opt) {
  MT_CHECK(!starts.empty(), "refit without starting points");
  std::vector<std::vector<double>> xs;
  for (const Law& law : starts) {
    std::vector<double> x(law_param_count(p.sparsity));
    law_to_x(law, x.data());
    xs.push_back(std::move(x));
  }
  return fit_from(p, xs, opt);
}

}  // namespace mt::ladder
