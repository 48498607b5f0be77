// pareto.h — the cost/value Pareto front of a sweep's runs (both lower is
// better) and the front as a function of cost, the baseline a candidate's
// expected improvement is measured against (sweep/carbs.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace mt {

struct CostValue {
  double cost = 0, value = 0;
};

// Indices of the non-dominated points, by increasing cost (so decreasing
// value): a point is kept when every cheaper-or-equal point is worse.
std::vector<size_t> pareto_front(const std::vector<CostValue>& points);

// The front as a curve of value against log cost: straight segments between
// the front's points, continued past the ends with the end segments' slopes
// (never rising with cost); a single point gives a flat line.
class FrontCurve {
 public:
  explicit FrontCurve(const std::vector<CostValue>& front_points);  // by increasing cost
  double at(double cost) const;
  bool empty() const { return log_cost_.empty(); }

 private:
  std::vector<double> log_cost_, value_;
};

// The best value among points of cost <= c (a step function; +inf below the
// cheapest): what a search has shown achievable at cost c.
double best_within(const std::vector<CostValue>& points, double c);

}  // namespace mt
