// ladder_gradcheck_test.cpp — the analytic gradients the ladder's L-BFGS fits
// rely on, against central differences in double: the Huber/log-sum-exp law
// objective (with and without the sparsity term, nearly-L1 and nearly-L2
// Huber thresholds, near and far from the optimum) and the downstream
// sigmoid's least squares. A deliberately wrong gradient must fail the check.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "ladder/downstream.h"
#include "ladder/objective.h"
#include "support/ladder_synthetic.h"

namespace mt::ladder {
namespace {

using Fn = std::function<double(const double* x, double* dx)>;

// Every coordinate: |numeric - analytic| <= 1e-6 * scale + 1e-4 |analytic|,
// scale = the largest analytic component (the check is relative to the
// gradient's size, which is ~delta times the data's log sizes).
void expect_gradient(const std::string& what, const Fn& f, std::vector<double> x, double h) {
  std::vector<double> g(x.size());
  f(x.data(), g.data());
  double scale = 0;
  for (double v : g) scale = std::max(scale, std::fabs(v));
  ASSERT_GT(scale, 0) << what << ": zero gradient checks nothing";
  for (size_t k = 0; k < x.size(); ++k) {
    const double x0 = x[k];
    x[k] = x0 + h;
    const double fp = f(x.data(), nullptr);
    x[k] = x0 - h;
    const double fm = f(x.data(), nullptr);
    x[k] = x0;
    const double num = (fp - fm) / (2 * h);
    EXPECT_NEAR(num, g[k], 1e-6 * scale + 1e-4 * std::fabs(g[k])) << what << " coordinate " << k;
  }
}

struct LawCase {
  const char* name;
  Sparsity sparsity;
  double delta;
  std::vector<double> x;  // a, b, e, alpha, beta[, gamma]
};

FitPoints points(Sparsity s) {
  std::vector<Run> runs = testing::grid_runs(testing::known_law(), testing::logspace(1e7, 1e10, 4),
                                             testing::logspace(1e9, 1e12, 4), 0.02, 11, {1.0, 4.0, 16.0});
  return *make_fit_points(runs, ParamCount::kActive, s);
}

TEST(LadderGradcheck, LawObjective) {
  const double a = std::log(400.0), b = std::log(1200.0), e = std::log(1.7);
  const LawCase cases[] = {
      {"near optimum, nearly L1", Sparsity::kNone, 1e-3, {a + 0.1, b - 0.1, e, 0.33, 0.31}},
      {"near optimum, nearly L2", Sparsity::kNone, 0.1, {a + 0.1, b - 0.1, e, 0.33, 0.31}},
      {"grid start", Sparsity::kNone, 1e-3, {5, 10, 0.5, 0.5, 1.0}},
      {"E term dominates", Sparsity::kNone, 1e-3, {0, 0, 1, 1.5, 2}},
      {"sparsity term", Sparsity::kTotalOverActive, 1e-3, {a, b, e, 0.3, 0.3, 0.2}},
      {"sparsity term, L2", Sparsity::kTotalOverActive, 0.5, {a - 1, b, e - 0.2, 0.35, 0.28, 0.5}},
  };
  for (const LawCase& c : cases) {
    const FitPoints p = points(c.sparsity);
    const Fn f = [&](const double* x, double* dx) { return law_objective(p, x, c.delta, dx); };
    expect_gradient(c.name, f, c.x, 1e-6);
  }
}

TEST(LadderGradcheck, DownstreamObjective) {
  const std::vector<double> loss = {2.0, 2.3, 2.6, 2.9, 3.2, 3.5};
  const std::vector<double> acc = {0.8, 0.7, 0.5, 0.45, 0.3, 0.27};
  for (double floor : {0.0, 0.25})
    for (const std::vector<double>& x : {std::vector<double>{2.7, 1.0}, std::vector<double>{2.2, 2.5}}) {
      const Fn f = [&](const double* xx, double* dx) { return downstream_objective(loss, acc, floor, xx, dx); };
      expect_gradient("sigmoid floor " + std::to_string(floor), f, x, 1e-6);
    }
}

TEST(LadderGradcheck, AWrongGradientFails) {
  const FitPoints p = points(Sparsity::kNone);
  const Fn wrong = [&](const double* x, double* dx) {
    const double f = law_objective(p, x, 1e-3, dx);
    if (dx) dx[3] *= 1.01;  // 1% off in d/d alpha
    return f;
  };
  EXPECT_NONFATAL_FAILURE(expect_gradient("wrong", wrong, {5, 7, 0.5, 0.4, 0.4}, 1e-6), "coordinate 3");
}

}  // namespace
}  // namespace mt::ladder
