// ladder_synthetic.h — scaling-ladder runs drawn from a known law, for the
// ladder tests: a grid of (N, D) or isoFLOP curves, losses with multiplicative
// log-normal noise from support/random.h (a pure function of the seed),
// optional MoE sparsity and benchmark accuracies.
#pragma once
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ladder/downstream.h"
#include "ladder/law.h"
#include "ladder/projection.h"
#include "ladder/results.h"
#include "support/random.h"

namespace mt::testing {

inline std::vector<double> logspace(double lo, double hi, int n) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(lo * std::pow(hi / lo, n == 1 ? 0.0 : double(i) / (n - 1)));
  return v;
}

// The law used throughout the ladder tests (Chinchilla-like magnitudes).
inline ladder::Law known_law() {
  ladder::Law l;
  l.E = 1.7;
  l.A = 400;
  l.B = 1200;
  l.alpha = 0.34;
  l.beta = 0.30;
  return l;
}

// Run i: loss = law(N, D, G) x exp(log_noise); G > 1 makes an MoE run
// (total = G x active).
inline ladder::Run make_run(const ladder::Law& law, double N, double D, double G, double log_noise, size_t i) {
  ladder::Run r;
  r.name = fmt::format("run{}", i);
  r.where = fmt::format("synthetic:{}", i + 1);
  r.active_params = N;
  r.total_params = N * G;
  r.tokens = D;
  r.flops = 6 * N * D;
  r.loss = ladder::law_loss(law, N, D, G) * std::exp(log_noise);
  return r;
}

// Every (G, N, D) of the given lists, with log-loss noise N(0, noise^2).
inline std::vector<ladder::Run> grid_runs(const ladder::Law& law, const std::vector<double>& Ns,
                                          const std::vector<double>& Ds, double noise, uint64_t seed,
                                          const std::vector<double>& Gs = {1.0}) {
  const std::vector<float> z = randn(int64_t(Gs.size() * Ns.size() * Ds.size()), float(noise), seed, 1);
  std::vector<ladder::Run> runs;
  for (double G : Gs)
    for (double N : Ns)
      for (double D : Ds) runs.push_back(make_run(law, N, D, G, z[runs.size()], runs.size()));
  return runs;
}

// isoFLOP curves: for each budget C, `sizes` models log-spaced over
// [N*/spread, N* spread] around the law's compute-optimal N*, D = C / (6N),
// labelled with the budget.
inline std::vector<ladder::Run> isoflop_runs(const ladder::Law& law, const std::vector<double>& budgets, int sizes,
                                             double spread, double noise, uint64_t seed) {
  const std::vector<float> z = randn(int64_t(budgets.size()) * sizes, float(noise), seed, 1);
  std::vector<ladder::Run> runs;
  for (size_t b = 0; b < budgets.size(); ++b) {
    const double n_opt = ladder::compute_optimal(law, budgets[b]).N;
    for (double N : logspace(n_opt / spread, n_opt * spread, sizes)) {
      ladder::Run r = make_run(law, N, budgets[b] / (6 * N), 1.0, z[runs.size()], runs.size());
      r.budget = fmt::format("c{}", b);  // fmt: GCC 12 -Wrestrict misfires on string operator+
      runs.push_back(r);
    }
  }
  return runs;
}

// Adds accuracy[task] = sigmoid(loss) + N(0, noise^2), clamped to [0, 1].
inline void add_accuracy(std::vector<ladder::Run>& runs, const std::string& task, const ladder::Sigmoid& s,
                         double noise, uint64_t seed) {
  const std::vector<float> z = randn(int64_t(runs.size()), float(noise), seed, 2);
  for (size_t i = 0; i < runs.size(); ++i) {
    const double acc = ladder::sigmoid_accuracy(s, runs[i].loss) + z[i];
    runs[i].accuracy[task] = std::fmin(1.0, std::fmax(0.0, acc));
  }
}

}  // namespace mt::testing
