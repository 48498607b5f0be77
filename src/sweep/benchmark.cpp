// benchmark.cpp — see benchmark.h.
#include "sweep/benchmark.h"

#include <algorithm>
#include <cmath>

#include "sweep/pareto.h"
#include "sweep/power_law.h"

namespace mt {

std::vector<SweepParam> ScalingBenchmark::space() const {
  SweepParam lr{"train.lr", ParamScale::kLog, 1e-4, 0.3, lr0, 0.15, {}};
  SweepParam n{"params", ParamScale::kLog, N_lo, N_hi, std::sqrt(N_lo * N_hi), 0.15, {}};
  SweepParam d{"tokens", ParamScale::kLog, D_lo, D_hi, std::sqrt(D_lo * D_hi), 0.15, {}};
  return {lr, n, d};
}

double ScalingBenchmark::loss(const std::vector<double>& x) const {
  const double lr = x[0], N = x[1], D = x[2];
  const double off = std::log(lr) - std::log(lr0 * std::pow(N / N0, -gamma));
  return E + A * std::pow(N, -alpha) + B * std::pow(D, -beta) + kappa * off * off;
}

double ScalingBenchmark::observe(const std::vector<double>& x, uint64_t seed, uint64_t index) const {
  return loss(x) + noise * philox_normal(seed, 7ull << 40, index);
}

double ScalingBenchmark::true_front(double C) const {
  // The learning rate sits in its valley; N over the domain with D = C / 6N
  // clamped to its bounds (then the cost is below C: still achievable).
  double best = INFINITY;
  const int steps = 2000;
  for (int i = 0; i <= steps; ++i) {
    const double N = N_lo * std::pow(N_hi / N_lo, double(i) / steps);
    const double D = std::min(D_hi, C / (6.0 * N));
    if (D < D_lo) continue;
    best = std::min(best, E + A * std::pow(N, -alpha) + B * std::pow(D, -beta));
  }
  return best;
}

const char* search_method_name(SearchMethod m) {
  return m == SearchMethod::kCarbs ? "carbs" : m == SearchMethod::kRandom ? "random" : "grid";
}

std::vector<SweepObservation> run_benchmark_search(const ScalingBenchmark& b, SearchMethod m, uint64_t seed,
                                                   double budget, const CarbsOptions& carbs_opt) {
  const std::vector<SweepParam> space = b.space();
  std::vector<SweepObservation> obs;
  double spent = 0;
  auto run = [&](const std::vector<double>& x) {
    const double c = b.cost(x);
    if (spent + c > budget) return false;
    spent += c;
    obs.push_back({x, b.observe(x, seed, obs.size()), c, false});
    return true;
  };
  if (m == SearchMethod::kGrid) {
    // The finest grid that fits: k levels of N and D, up to 2k of lr (free in cost).
    for (int k = 8; k >= 2; --k) {
      const int klr = 2 * k;
      double total = 0;
      std::vector<std::vector<double>> pts;
      for (int a = 0; a < klr; ++a)
        for (int i = 0; i < k; ++i)
          for (int j = 0; j < k; ++j) {
            const std::vector<double> u = {(a + 0.5) / klr, double(i) / (k - 1), double(j) / (k - 1)};
            std::vector<double> x(3);
            for (int d = 0; d < 3; ++d) x[size_t(d)] = from_unit(space[size_t(d)], u[size_t(d)]);
            total += b.cost(x);
            pts.push_back(x);
          }
      if (total <= budget || k == 2) {
        for (const auto& x : pts) run(x);
        return obs;
      }
    }
    return obs;
  }
  if (m == SearchMethod::kRandom) {
    for (uint64_t i = 0;; ++i) {
      std::vector<double> x(3);
      for (size_t d = 0; d < 3; ++d) x[d] = from_unit(space[d], philox_uniform(seed, 9ull << 40, i * 3 + d));
      if (!run(x)) return obs;
    }
  }
  CarbsOptions opt = carbs_opt;
  opt.seed = seed;
  opt.cost_of = [&b](const std::vector<double>& x) { return b.cost(x); };
  Carbs search(space, opt);
  for (uint64_t i = 0;; ++i) {
    const std::vector<double> x = search.suggest(i);
    if (!run(x)) return obs;
    search.observe(obs.back());
  }
}

double front_gap(const ScalingBenchmark& b, const std::vector<SweepObservation>& obs, double C_lo, double C_hi,
                 int points) {
  std::vector<CostValue> truth;
  for (const SweepObservation& o : obs) truth.push_back({o.cost, b.loss(o.settings)});
  std::vector<double> centre;
  for (const SweepParam& p : b.space()) centre.push_back(p.center);
  double sum = 0;
  for (int i = 0; i < points; ++i) {
    const double C = C_lo * std::pow(C_hi / C_lo, points > 1 ? double(i) / (points - 1) : 0.0);
    double got = best_within(truth, C);
    if (!std::isfinite(got)) got = b.loss(centre);
    sum += got - b.true_front(C);
  }
  return sum / points;
}

double fitted_lr_exponent(const std::vector<SweepObservation>& obs, double C_lo, double C_hi) {
  std::vector<CostValue> pts;
  for (const SweepObservation& o : obs) pts.push_back({o.cost, o.failed ? INFINITY : o.value});
  std::vector<double> cost, lr;
  for (size_t i : pareto_front(pts))
    if (obs[i].cost >= C_lo && obs[i].cost <= C_hi) {
      cost.push_back(obs[i].cost);
      lr.push_back(obs[i].settings[0]);
    }
  return fit_power_law(cost, lr).b;
}

}  // namespace mt
