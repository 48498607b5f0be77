// pareto.cpp — see pareto.h.
#include "sweep/pareto.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace mt {

std::vector<size_t> pareto_front(const std::vector<CostValue>& points) {
  std::vector<size_t> order(points.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return points[a].cost != points[b].cost ? points[a].cost < points[b].cost : points[a].value < points[b].value;
  });
  std::vector<size_t> front;
  double best = INFINITY;
  for (size_t i : order)
    if (points[i].value < best) {
      front.push_back(i);
      best = points[i].value;
    }
  return front;
}

FrontCurve::FrontCurve(const std::vector<CostValue>& front) {
  for (const CostValue& p : front) {
    log_cost_.push_back(std::log(p.cost));
    value_.push_back(p.value);
  }
}

double FrontCurve::at(double cost) const {
  if (log_cost_.empty()) return INFINITY;
  const size_t n = log_cost_.size();
  if (n == 1) return value_[0];
  const double x = std::log(cost);
  size_t i = 0;  // segment [i, i + 1]
  if (x >= log_cost_[n - 1]) {
    i = n - 2;
  } else if (x > log_cost_[0]) {
    i = size_t(std::upper_bound(log_cost_.begin(), log_cost_.end(), x) - log_cost_.begin()) - 1;
  }
  const double dx = log_cost_[i + 1] - log_cost_[i];
  const double slope = dx > 0 ? std::min(0.0, (value_[i + 1] - value_[i]) / dx) : 0.0;
  return value_[i] + slope * (x - log_cost_[i]);
}

double best_within(const std::vector<CostValue>& points, double c) {
  double best = INFINITY;
  for (const CostValue& p : points)
    if (p.cost <= c) best = std::min(best, p.value);
  return best;
}

}  // namespace mt
