// law.h — the parametric scaling law of Hoffmann et al. (2022, approach 3)
//     L(N, D) = E + A / N^alpha + B / D^beta
// optionally with a sparsity term for MoE runs,
//     L(N, D, G) = E + A / (N^alpha G^gamma) + B / D^beta,   G = N_total / N_active or n_experts,
// and the data it is fitted to. N is the active or the total parameter count
// (the user chooses), D training tokens. Other tools read E, A, B, alpha, beta.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "ladder/results.h"

namespace mt::ladder {

// Which parameter count is N.
enum class ParamCount { kActive, kTotal };
// The sparsity factor G of the optional extra term (kNone: no term, gamma = 0).
enum class Sparsity { kNone, kTotalOverActive, kExperts };

const char* param_count_name(ParamCount p);  // "active", "total"
const char* sparsity_name(Sparsity s);       // "none", "total_over_active", "n_experts"

struct Law {
  double E = 0, A = 0, B = 0;  // loss units (nats per token)
  double alpha = 0, beta = 0;  // exponents of N and D
  double gamma = 0;            // exponent of G; 0 without the sparsity term
  Sparsity sparsity = Sparsity::kNone;
};

// L(N, D, G); G is ignored (taken as 1) without the sparsity term.
double law_loss(const Law& law, double N, double D, double G = 1.0);

// The fitted points, in logs: what the objective reads. Row i is one run.
struct FitPoints {
  std::vector<double> log_n, log_d, log_loss;
  std::vector<double> log_g;       // empty without the sparsity term
  std::vector<std::string> names;  // run names, for reports
  ParamCount param_count = ParamCount::kActive;
  Sparsity sparsity = Sparsity::kNone;
  int64_t size() const { return int64_t(log_n.size()); }
};

// Selects N (and G) from each run. Errors name the run (FILE:LINE) when a run
// lacks what the choice needs (n_experts), or when G is the same for every run
// (gamma would not be identifiable).
Result<FitPoints> make_fit_points(const std::vector<Run>& runs, ParamCount n, Sparsity s);

// Rows `idx` of `p` (a bootstrap resample; repeats allowed).
FitPoints subset(const FitPoints& p, const std::vector<int64_t>& idx);

// The optimiser's coordinates, after Besiroglu et al. (2024):
//   x = (a, b, e, alpha, beta[, gamma]),  A = exp(a), B = exp(b), E = exp(e),
// so that log L = LSE(a - alpha log N - gamma log G, b - beta log D, e).
constexpr int kLawParams = 5;        // without the sparsity term
constexpr int kLawParamsSparse = 6;  // with it
int law_param_count(Sparsity s);
Law law_from_x(const double* x, Sparsity s);
void law_to_x(const Law& law, double* x);  // writes law_param_count(law.sparsity) values

}  // namespace mt::ladder
