// projection.h — what a fitted law says about a run not yet trained: its loss
// at a given (N, D), and for a compute budget C = 6 N D the compute-optimal
// split (Hoffmann et al. 2022, eq. 4) or the split at a chosen tokens-per-
// parameter ratio (hero runs are over-trained on purpose, for cheaper
// inference). With the sparsity term the law is taken at a fixed G, which
// only rescales A: A_G = A / G^gamma.
#pragma once
#include <cmath>

#include "ladder/law.h"

namespace mt::ladder {

struct Allocation {
  double N = NAN, D = NAN, loss = NAN;
  double tokens_per_param() const { return D / N; }
};

// argmin over N of L(N, C / (6N), G):
//   N* = K (C/6)^(beta/(alpha+beta)),  K = (alpha A_G / (beta B))^(1/(alpha+beta)).
// All NaN when the law has no interior optimum (alpha <= 0 or beta <= 0),
// which a bootstrap refit can produce; callers check std::isfinite.
Allocation compute_optimal(const Law& law, double C, double G = 1.0);

// N = sqrt(C / (6 R)), D = R N: the split of C at R tokens per parameter.
Allocation at_tokens_per_param(const Law& law, double C, double R, double G = 1.0);

// The law at (N, D, G) as an Allocation (loss filled in).
Allocation at_size(const Law& law, double N, double D, double G = 1.0);

}  // namespace mt::ladder
