// downstream.h — the second step of the Llama 3 two-step projection (Llama
// Team 2024, §3.2.1): compute -> loss comes from the fitted law, loss ->
// benchmark accuracy from a sigmoid fitted to the ladder's runs,
//     acc(L) = floor + (1 - floor) / (1 + exp(k (L - L0))),   k > 0,
// falling from 1 at low loss to `floor` (the task's chance accuracy, given by
// the user; 0 by default) at high loss, with L0 the loss at the midpoint.
// Llama 3 regressed accuracy on the normalised NLL of the correct answer; the
// x here is the run's training/validation loss, the quantity the law fits.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace mt::ladder {

struct Sigmoid {
  double floor = 0;  // accuracy as L -> infinity (chance)
  double L0 = 0;     // loss at the midpoint between floor and 1
  double k = 1;      // steepness, per nat of loss (> 0)
};

double sigmoid_accuracy(const Sigmoid& s, double loss);

struct DownstreamFit {
  std::string task;
  Sigmoid sigmoid;
  int64_t runs = 0;  // runs that report this task
  double rmse = 0;   // root mean square accuracy residual
};

// Least squares in accuracy over (L0, log k), by L-BFGS from a small grid
// (L0 at quantiles of the observed losses, k in {1, e, e^2, e^3}). Needs 3
// runs with distinct losses; the message names the task otherwise.
Result<DownstreamFit> fit_downstream(const std::string& task, const std::vector<double>& loss,
                                     const std::vector<double>& accuracy, double floor);

// Refit from `start` only (bootstrap resamples); NaN parameters on failure.
Sigmoid refit_downstream(const std::vector<double>& loss, const std::vector<double>& accuracy, const Sigmoid& start);

// Sum of squared residuals at (L0, log k) and its gradient (when d is not
// null), for the fit and its gradient check.
double downstream_objective(const std::vector<double>& loss, const std::vector<double>& accuracy, double floor,
                            const double* x, double* d);

}  // namespace mt::ladder
