// benchmark.h — a sweep problem with a known answer, to measure a search
// against random search and a grid at equal total cost: a Chinchilla-form
// loss surface (Hoffmann et al. 2022, their fitted E, A, B, alpha, beta)
// over parameters N and tokens D, plus a learning-rate valley whose floor
// moves with N,
//   L(lr, N, D) = E + A N^-alpha + B D^-beta + kappa (ln lr - ln lr*(N))^2,
//   lr*(N) = lr0 (N / N0)^-gamma,
// observed with Gaussian noise, at cost 6 N D. At compute C the best
// allocation is N*(C) ~ C^(beta / (alpha + beta)), so the best learning rate
// scales as lr*(C) ~ C^(-gamma beta / (alpha + beta)): the exponent a search
// should recover from its front.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sweep/carbs.h"
#include "sweep/space.h"

namespace mt {

struct ScalingBenchmark {
  double E = 1.69, A = 406.4, alpha = 0.34, B = 410.7, beta = 0.28;
  double kappa = 0.2, lr0 = 0.02, N0 = 1e6, gamma = 0.3;
  double noise = 0.005;
  double N_lo = 1e6, N_hi = 1e8, D_lo = 1e8, D_hi = 1e10;

  // lr (log), N (log), D (log); centred on lr0, sqrt(N_lo N_hi), sqrt(D_lo D_hi).
  std::vector<SweepParam> space() const;
  double loss(const std::vector<double>& x) const;  // noise-free
  double observe(const std::vector<double>& x, uint64_t seed, uint64_t index) const;
  double cost(const std::vector<double>& x) const { return 6.0 * x[1] * x[2]; }
  double true_front(double C) const;  // min over the domain of the loss at cost C
  double lr_exponent() const { return -gamma * beta / (alpha + beta); }
};

enum class SearchMethod { kCarbs, kRandom, kGrid };
const char* search_method_name(SearchMethod m);

// Runs `m` on the benchmark until the runs' costs sum to `budget` (the run
// that would pass it is not run); returns every observation (values noisy).
std::vector<SweepObservation> run_benchmark_search(const ScalingBenchmark& b, SearchMethod m, uint64_t seed,
                                                   double budget, const CarbsOptions& carbs = {});

// Mean over `points` log-spaced costs in [C_lo, C_hi] of (the best noise-free
// loss among runs of cost <= C) - true_front(C): how far above the true
// front the search's front lies (a cost with no run yet counts the loss at
// the space's centre).
double front_gap(const ScalingBenchmark& b, const std::vector<SweepObservation>& obs, double C_lo, double C_hi,
                 int points = 16);

// The exponent of lr against cost fitted (least squares in logs) over the
// runs on the observed front with cost in [C_lo, C_hi]; NaN with fewer than 3.
double fitted_lr_exponent(const std::vector<SweepObservation>& obs, double C_lo, double C_hi);

}  // namespace mt
