// carbs.cpp — see carbs.h.
#include "sweep/carbs.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/rng.h"

namespace mt {
namespace {

// Streams of the counter-based draws, so no two uses share numbers.
constexpr uint64_t kStreamTarget = 1ull << 40;
constexpr uint64_t kStreamDraw = 2ull << 40;

// A run the surrogates learn the value of: not failed, with a finite value and a positive cost.
bool succeeded(const SweepObservation& o) { return !o.failed && std::isfinite(o.value) && o.cost > 0; }

std::vector<double> units(const std::vector<SweepParam>& space, const std::vector<double>& natural) {
  std::vector<double> u(space.size());
  for (size_t i = 0; i < space.size(); ++i) u[i] = to_unit(space[i], natural[i]);
  return u;
}

std::vector<double> naturals(const std::vector<SweepParam>& space, const std::vector<double>& unit) {
  std::vector<double> x(space.size());
  for (size_t i = 0; i < space.size(); ++i) x[i] = from_unit(space[i], unit[i]);
  return x;
}

}  // namespace

double philox_uniform(uint64_t seed, uint64_t stream, uint64_t counter) {
  return (double(philox_u64(seed, stream, counter) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

double philox_normal(uint64_t seed, uint64_t stream, uint64_t counter) {
  const double u1 = philox_uniform(seed, stream, 2 * counter), u2 = philox_uniform(seed, stream, 2 * counter + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

double expected_improvement(double best, double mean, double sd) {
  if (!std::isfinite(best)) return 0.0;
  if (sd <= 1e-12) return std::max(best - mean, 0.0);
  const double z = (best - mean) / sd;
  const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
  const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI);
  return (best - mean) * cdf + sd * pdf;
}

Carbs::Carbs(std::vector<SweepParam> space, CarbsOptions opt) : space_(std::move(space)), opt_(std::move(opt)) {
  MT_CHECK(!space_.empty(), "a sweep needs at least one hyperparameter");
}

std::vector<double> Carbs::draw_around(const std::vector<double>& unit, uint64_t index, uint64_t draw) const {
  std::vector<double> u(unit.size());
  for (size_t i = 0; i < unit.size(); ++i)
    u[i] = std::clamp(
        unit[i] + space_[i].radius * philox_normal(opt_.seed, kStreamDraw + index, draw * space_.size() + i), 0.0, 1.0);
  return u;
}

std::vector<size_t> Carbs::front() const {
  std::vector<CostValue> pts;
  std::vector<size_t> idx;
  for (size_t i = 0; i < obs_.size(); ++i)
    if (succeeded(obs_[i])) {
      pts.push_back({obs_[i].cost, obs_[i].value});
      idx.push_back(i);
    }
  std::vector<size_t> out;
  for (size_t j : pareto_front(pts)) out.push_back(idx[j]);
  return out;
}

std::vector<double> Carbs::suggest(uint64_t index) const {
  std::vector<double> center(space_.size());
  for (size_t i = 0; i < space_.size(); ++i) center[i] = to_unit(space_[i], space_[i].center);
  std::vector<std::vector<double>> X;
  std::vector<double> y;
  for (const SweepObservation& o : obs_)
    if (succeeded(o)) {
      X.push_back(units(space_, o.settings));
      y.push_back(o.value);
    }
  if (int(obs_.size()) < opt_.initial || X.size() < 2) {
    // The first runs spread over cost when it is known: of the draws around
    // the centre, the one at quantile (index + 1/2) / initial of their costs,
    // so the front starts out covering cheap and dear settings alike.
    if (!opt_.cost_of || opt_.initial < 2) return naturals(space_, draw_around(center, index, 0));
    std::vector<std::pair<double, std::vector<double>>> draws;
    for (uint64_t k = 0; k < 64; ++k) {
      std::vector<double> u = draw_around(center, index, k);
      const double cost = opt_.cost_of(naturals(space_, u));
      if (std::isfinite(cost) && cost > 0) draws.push_back({cost, std::move(u)});
    }
    if (draws.empty()) return naturals(space_, draw_around(center, index, 0));
    std::stable_sort(draws.begin(), draws.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    if (!opt_.focus_costs.empty()) {  // the costliest draw at or below the focus cost, else the cheapest
      const double focus = opt_.focus_costs[index % opt_.focus_costs.size()];
      size_t pick = 0;
      for (size_t k = 0; k < draws.size(); ++k)
        if (draws[k].first <= focus) pick = k;
      return naturals(space_, draws[pick].second);
    }
    const double q = (double(index % uint64_t(opt_.initial)) + 0.5) / double(opt_.initial);
    return naturals(space_, draws[std::min(draws.size() - 1, size_t(q * double(draws.size())))].second);
  }

  const GaussianProcess value_gp = GaussianProcess::fit(X, y, opt_.gp);
  GaussianProcess cost_gp;
  std::vector<std::vector<double>> Xall;
  if (!opt_.cost_of) {
    std::vector<double> log_cost;
    for (const SweepObservation& o : obs_)
      if (o.cost > 0) {
        Xall.push_back(units(space_, o.settings));
        log_cost.push_back(std::log(o.cost));
      }
    if (Xall.empty()) return naturals(space_, draw_around(center, index, 0));  // no cost seen yet
    cost_gp = GaussianProcess::fit(Xall, log_cost, opt_.gp);
  }
  auto log_cost_of = [&](const std::vector<double>& u) {
    return opt_.cost_of ? std::log(opt_.cost_of(naturals(space_, u))) : cost_gp.predict(u).mean;
  };
  // Chance of success: kernel-weighted share of succeeded runs nearby, with one prior success and one prior failure.
  const std::vector<double>& theta = value_gp.theta();
  std::vector<std::vector<double>> obs_units;  // once, not once per candidate
  for (const SweepObservation& o : obs_) obs_units.push_back(units(space_, o.settings));
  auto p_success = [&](const std::vector<double>& u) {
    double ok = 1.0, all = 2.0;
    for (size_t j = 0; j < obs_.size(); ++j) {
      const SweepObservation& o = obs_[j];
      const std::vector<double>& v = obs_units[j];
      double r2 = 0;
      for (size_t i = 0; i < u.size(); ++i) r2 += (u[i] - v[i]) * (u[i] - v[i]) * std::exp(-2.0 * theta[i]);
      const double w = std::exp(-0.5 * r2);
      all += w;
      ok += succeeded(o) ? w : 0.0;
    }
    return ok / all;
  };

  const std::vector<size_t> front_idx = front();
  std::vector<CostValue> front_pts;
  for (size_t i : front_idx) front_pts.push_back({obs_[i].cost, obs_[i].value});
  const FrontCurve curve(front_pts);

  double lo = INFINITY, hi = -INFINITY;
  for (const SweepObservation& o : obs_)
    if (o.cost > 0) {  // a run refused before it ran has no cost
      lo = std::min(lo, std::log(o.cost));
      hi = std::max(hi, std::log(o.cost));
    }
  if (!(hi >= lo)) lo = hi = 0;
  const double range = std::max(hi - lo, 1e-9);
  const double target = opt_.focus_costs.empty()
                            ? lo + philox_uniform(opt_.seed, kStreamTarget, index) * range * (1.0 + opt_.cost_extension)
                            : std::log(opt_.focus_costs[index % opt_.focus_costs.size()]);

  struct Candidate {
    std::vector<double> u;
    double log_cost, score;
  };
  std::vector<Candidate> cands;
  uint64_t draw = 1;
  std::vector<std::vector<double>> anchors;
  for (size_t i : front_idx) anchors.push_back(units(space_, obs_[i].settings));
  anchors.push_back(center);
  for (const std::vector<double>& a : anchors)
    for (int k = 0; k < opt_.candidates_per_member; ++k) {
      Candidate c;
      c.u = draw_around(a, index, draw++);
      c.log_cost = log_cost_of(c.u);
      const GpPrediction p = value_gp.predict(c.u);
      c.score = expected_improvement(curve.at(std::exp(c.log_cost)), p.mean, std::sqrt(p.var)) * p_success(c.u);
      cands.push_back(std::move(c));
    }
  // Near the target: within the window of it; at or below a focus cost (a
  // run compared at that cost must not cost more).
  auto near_target = [&](double log_cost) {
    const double miss = opt_.cost_window * range;
    return opt_.focus_costs.empty() ? std::fabs(log_cost - target) <= miss
                                    : log_cost <= target + 1e-12 && target - log_cost <= miss;
  };
  const Candidate* best = nullptr;
  for (const Candidate& c : cands)
    if (near_target(c.log_cost) && (!best || c.score > best->score)) best = &c;
  // None near the target cost: the nearest ones (with a focus cost, those at
  // or below it first).
  for (int below = opt_.focus_costs.empty() ? 0 : 1; !best && below >= 0; --below)
    for (const Candidate& c : cands) {
      if (!std::isfinite(c.log_cost)) continue;  // settings whose cost is unknown (a refused config)
      if (below && c.log_cost > target + 1e-12) continue;
      const double d = std::fabs(c.log_cost - target);
      if (!best || d < std::fabs(best->log_cost - target) - 1e-12 ||
          (std::fabs(d - std::fabs(best->log_cost - target)) <= 1e-12 && c.score > best->score))
        best = &c;
    }
  if (!best) return naturals(space_, draw_around(center, index, 0));  // no candidate has a known cost
  return naturals(space_, best->u);
}

}  // namespace mt
