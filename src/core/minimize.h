// minimize.h — unconstrained minimisation with L-BFGS (liblbfgs, Okazaki's C
// port of Nocedal's L-BFGS with the More-Thuente line search). The only file
// that includes <lbfgs.h>, so the optimiser can be swapped in one place.
// In core: the scaling-law fits (ladder/) and the mixture search (mix/) both
// minimise with it.
// Reentrant: fits run in parallel from many starting points.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mt {

// Value at x; writes the gradient into dx (same length as x).
using MinimizeObjective = std::function<double(const double* x, double* dx)>;

struct MinimizeOptions {
  int64_t max_iterations = 1000;
  double grad_tol = 1e-9;       // stop when |grad| < grad_tol * max(1, |x|)
  double rel_decrease = 1e-12;  // ... or when f fell by less than this fraction over the last 5 iterations
  // ... or when f reached this value: for objectives whose infimum is an exact
  // fit approached without end (a fraction of f never stops falling), the
  // point where the residual is below anything that matters.
  double f_floor = -INFINITY;
};

struct MinimizeResult {
  double f = 0;  // objective at the returned x
  int code = 0;  // liblbfgs's return code (0: converged)
  bool reached_floor = false;  // stopped because f reached MinimizeOptions::f_floor (code is then LBFGS_STOP)
  // A line search that cannot make progress (rounding error, minimum step)
  // is how L-BFGS usually ends on a nearly flat objective; liblbfgs then
  // returns the last accepted point, which is still a valid answer.
  bool converged() const { return code >= 0; }
};

// Minimises f from x (overwritten with the minimiser).
MinimizeResult minimize_lbfgs(const MinimizeObjective& f, std::vector<double>& x, const MinimizeOptions& opt = {});

// liblbfgs's return code in words, for reports.
std::string lbfgs_code_text(int code);

}  // namespace mt
