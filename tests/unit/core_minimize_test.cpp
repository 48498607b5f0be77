// core_minimize_test.cpp — minimize_lbfgs finds the minimiser of a convex
// quadratic, and an objective whose infimum lies at infinity stops where it
// reaches f_floor (fewer evaluations, liblbfgs's stop code) instead of
// running on.
#include "core/minimize.h"

#include <gtest/gtest.h>

#include <cmath>

namespace mt {
namespace {

TEST(MinimizeLbfgs, FindsTheMinimiserOfAQuadratic) {
  // f = sum_i (i + 1) (x_i - i)^2
  const MinimizeObjective f = [](const double* x, double* dx) {
    double v = 0;
    for (int i = 0; i < 4; ++i) {
      v += (i + 1) * (x[i] - i) * (x[i] - i);
      dx[i] = 2 * (i + 1) * (x[i] - i);
    }
    return v;
  };
  std::vector<double> x(4, 10.0);
  const MinimizeResult r = minimize_lbfgs(f, x);
  EXPECT_TRUE(r.converged()) << lbfgs_code_text(r.code);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(x[size_t(i)], i, 1e-6);
  EXPECT_LT(r.f, 1e-10);
}

TEST(MinimizeLbfgs, AnObjectiveFallingWithoutEndStopsAtTheFloor) {
  // f = exp(-x0) + x1^2: the infimum 0 is approached as x0 grows without end.
  int evaluations = 0;
  const MinimizeObjective f = [&](const double* x, double* dx) {
    ++evaluations;
    dx[0] = -std::exp(-x[0]);
    dx[1] = 2 * x[1];
    return std::exp(-x[0]) + x[1] * x[1];
  };
  std::vector<double> x = {0.0, 1.0};
  MinimizeOptions open;
  const MinimizeResult unbounded = minimize_lbfgs(f, x, open);
  const int unbounded_evaluations = evaluations;
  EXPECT_LT(unbounded.f, 1e-6);

  evaluations = 0;
  x = {0.0, 1.0};
  MinimizeOptions floored;
  floored.f_floor = 1e-2;
  const MinimizeResult r = minimize_lbfgs(f, x, floored);
  EXPECT_TRUE(r.converged()) << lbfgs_code_text(r.code);
  EXPECT_TRUE(r.reached_floor);
  EXPECT_FALSE(unbounded.reached_floor);
  EXPECT_LE(r.f, 1e-2);
  EXPECT_GT(r.f, 1e-6);
  EXPECT_LT(evaluations, unbounded_evaluations);
}

}  // namespace
}  // namespace mt
