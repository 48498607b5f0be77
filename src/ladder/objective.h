// objective.h — what the law fit minimises (Besiroglu et al. 2024, following
// Hoffmann et al. 2022, approach 3): the sum over runs of
//     Huber_delta( LSE(a - alpha log N - gamma log G, b - beta log D, e) - log L )
// with x = (a, b, e, alpha, beta[, gamma]) as in law.h. Fitting log L with a
// Huber loss (delta 1e-3: nearly an L1 loss) keeps a few outlying runs from
// dominating; the log-sum-exp form keeps every step finite and A, B, E > 0.
#pragma once
#include "ladder/law.h"

namespace mt::ladder {

// Huber loss: r^2 / 2 for |r| <= delta, else delta (|r| - delta / 2) (the
// form of scipy.special.huber that the replication summed). C^1 in r.
double huber(double r, double delta);

// The objective at x (law_param_count(p.sparsity) values). When dx is not
// null it receives the gradient (=, not +=), in the same layout as x.
double law_objective(const FitPoints& p, const double* x, double delta, double* dx);

}  // namespace mt::ladder
