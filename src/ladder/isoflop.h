// isoflop.h — Hoffmann et al. (2022), approach 2: runs that share a compute
// budget C form an isoFLOP curve; a parabola in log N (and one in log D)
// through each curve gives the loss-optimal N*(C) and D*(C), and straight
// lines through (log C, log N*) and (log C, log D*) give N* ~ C^a, D* ~ C^b.
// Budgets are the runs' `budget` labels, never guessed from `flops`: measured
// or extracted flops scatter by a few percent, and on the Chinchilla data
// grouping by nearby flops made "budgets" of unrelated runs and a confident,
// wrong exponent. Used only when the data allow it; the fit says why not.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ladder/law.h"
#include "ladder/results.h"

namespace mt::ladder {

struct IsoflopOptions {
  int64_t min_runs_per_budget = 3;  // distinct N values on one curve
  int64_t min_budgets = 3;          // budgets with an interior minimum, for a line with a standard error
};

struct BudgetCurve {
  std::string label;  // the runs' `budget` label
  double flops = 0;   // C: geometric mean of the runs' flops
  int64_t runs = 0;
  bool used = false;            // an interior minimum was found in both log N and log D
  std::string why_not;          // when not used
  double n_opt = 0, d_opt = 0;  // argmin of the parabolas (N by ParamCount)
  double loss_at_n_opt = 0;     // the parabola's minimum in log N
};

struct PowerLaw {  // y = k C^exponent, fitted in logs by least squares
  double k = 0, exponent = 0;
  double exponent_se = NAN;  // classical standard error of the slope
  double at(double C) const;
};

struct IsoflopFit {
  std::vector<BudgetCurve> budgets;  // by increasing flops
  bool fitted = false;
  std::string why_not;    // when not fitted
  PowerLaw n_opt, d_opt;  // N*(C), D*(C)
  int64_t budgets_used = 0;
};

IsoflopFit fit_isoflop(const std::vector<Run>& runs, ParamCount n, const IsoflopOptions& opt = {});

// Least squares y = c0 + c1 x + c2 x^2 (for tests and the per-budget fits);
// false when the system is singular (fewer than 3 distinct x).
bool fit_parabola(const std::vector<double>& x, const std::vector<double>& y, double c[3]);

}  // namespace mt::ladder
