// scaling_law.h — the parameter:data trade. L(N, D) = E + A / N^alpha + B / D^beta
// with training compute C = 6 N D: compute-optimal N and D, the loss penalty
// and inference saving of training k times past the optimal tokens per
// parameter at the same compute, and isoFLOP curves. The default fit is
// Besiroglu et al. (2024), the replication of Hoffmann et al. (2022)
// approach 3 on the extracted Chinchilla data (shared/reference/chinchilla).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace mt {
class ConfigSchema;
}  // namespace mt

namespace mt::plan {

struct ScalingLaw {
  std::string name;
  double E = 0, A = 0, B = 0, alpha = 0, beta = 0;
};

ScalingLaw besiroglu2024();  // E 1.8172, A 482.01, B 2085.43, alpha 0.3478, beta 0.3658
ScalingLaw hoffmann2022();   // E 1.69, A 406.4, B 410.7, alpha 0.34, beta 0.28

// A preset name ("besiroglu2024", "hoffmann2022") or a TOML file with a
// [fit] table: name, E, A, B, alpha, beta (all required but name).
Result<ScalingLaw> load_scaling_law(const std::string& name_or_path);
// Declares the [fit] keys of a scaling-law file, bound to `s`.
void declare_keys(mt::ConfigSchema& schema, ScalingLaw& s);

Result<ScalingLaw> parse_scaling_law(const std::string& text, const std::string& source);

double loss(const ScalingLaw& s, double N, double D);

struct Allocation {
  double N = 0, D = 0, loss = 0;
  double tokens_per_param() const { return D / N; }
};
// argmin over N of L(N, C / (6N)): N = G (C/6)^(beta/(alpha+beta)), G = (alpha A / (beta B))^(1/(alpha+beta)).
Allocation compute_optimal(const ScalingLaw& s, double C);

struct Overtrain {
  double k = 1;                 // tokens per parameter, as a multiple of the compute-optimal ratio
  Allocation at;                // N = N_opt / sqrt(k), D = D_opt sqrt(k): same compute
  double loss_penalty = 0;      // L(at) - L(optimal)
  double inference_saving = 0;  // 1 - N / N_opt: fraction of inference FLOPs per token saved
};
Overtrain overtrain(const ScalingLaw& s, double C, double k);

// Where (N, D) sits: k such that D / N = k x the optimal ratio at C = 6 N D.
double overtrain_factor(const ScalingLaw& s, double N, double D);

// (N, L(N, C/(6N))) for N log-spaced over [n_lo, n_hi].
std::vector<std::pair<double, double>> isoflop_curve(const ScalingLaw& s, double C, double n_lo, double n_hi,
                                                     int points);

}  // namespace mt::plan
