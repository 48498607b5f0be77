// downstream.cpp — see downstream.h. With z = -k (L - L0) and s = sigmoid(z):
// d acc / d L0 = (1 - floor) s (1 - s) k and d acc / d log k = (1 - floor) s (1 - s) z.
#include "ladder/downstream.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/minimize.h"

namespace mt::ladder {
namespace {

double logistic(double z) {  // 1 / (1 + e^-z) without overflow for large |z|
  if (z >= 0) return 1.0 / (1.0 + std::exp(-z));
  const double e = std::exp(z);
  return e / (1.0 + e);
}

struct Fitted {
  double f = INFINITY;
  double x[2] = {NAN, NAN};
};

Fitted minimize_from(const std::vector<double>& loss, const std::vector<double>& acc, double floor, double L0,
                     double log_k) {
  const MinimizeObjective f = [&](const double* x, double* d) { return downstream_objective(loss, acc, floor, x, d); };
  std::vector<double> x = {L0, log_k};
  Fitted r;
  r.f = minimize_lbfgs(f, x, MinimizeOptions{1000, 1e-10, 1e-13}).f;
  r.x[0] = x[0];
  r.x[1] = x[1];
  return r;
}

Sigmoid to_sigmoid(const Fitted& r, double floor) { return Sigmoid{floor, r.x[0], std::exp(r.x[1])}; }

}  // namespace

double sigmoid_accuracy(const Sigmoid& s, double loss) {
  return s.floor + (1 - s.floor) * logistic(-s.k * (loss - s.L0));
}

double downstream_objective(const std::vector<double>& loss, const std::vector<double>& accuracy, double floor,
                            const double* x, double* d) {
  const double L0 = x[0], k = std::exp(x[1]);
  double f = 0, g0 = 0, g1 = 0;
  for (size_t i = 0; i < loss.size(); ++i) {
    const double z = -k * (loss[i] - L0);
    const double s = logistic(z);
    const double r = floor + (1 - floor) * s - accuracy[i];
    f += r * r;
    const double dz = 2 * r * (1 - floor) * s * (1 - s);
    g0 += dz * k;
    g1 += dz * z;
  }
  if (d) {
    d[0] = g0;
    d[1] = g1;
  }
  return f;
}

Result<DownstreamFit> fit_downstream(const std::string& task, const std::vector<double>& loss,
                                     const std::vector<double>& accuracy, double floor) {
  if (std::set<double>(loss.begin(), loss.end()).size() < 3)
    return Status::errorf("accuracy '{}': {} run(s) report it, the sigmoid fit needs 3 with different losses", task,
                          loss.size());
  if (!(floor >= 0 && floor < 1))
    return Status::errorf("accuracy '{}': chance accuracy must be in [0, 1), got {}", task, floor);
  std::vector<double> sorted = loss;
  std::sort(sorted.begin(), sorted.end());
  Fitted best;
  for (double q : {0.0, 0.25, 0.5, 0.75, 1.0}) {
    const double L0 = sorted[size_t(std::lround(q * double(sorted.size() - 1)))];
    for (double log_k : {0.0, 1.0, 2.0, 3.0}) {
      const Fitted r = minimize_from(loss, accuracy, floor, L0, log_k);
      if (r.f < best.f) best = r;  // strict: ties keep the earlier start
    }
  }
  if (!std::isfinite(best.f)) return Status::errorf("accuracy '{}': the sigmoid fit did not converge", task);
  DownstreamFit fit;
  fit.task = task;
  fit.sigmoid = to_sigmoid(best, floor);
  fit.runs = int64_t(loss.size());
  fit.rmse = std::sqrt(best.f / double(loss.size()));
  return fit;
}

Sigmoid refit_downstream(const std::vector<double>& loss, const std::vector<double>& accuracy, const Sigmoid& start) {
  if (std::set<double>(loss.begin(), loss.end()).size() < 3) return Sigmoid{start.floor, NAN, NAN};
  const Fitted r = minimize_from(loss, accuracy, start.floor, start.L0, std::log(start.k));
  if (!std::isfinite(r.f)) return Sigmoid{start.floor, NAN, NAN};
  return to_sigmoid(r, start.floor);
}

}  // namespace mt::ladder
