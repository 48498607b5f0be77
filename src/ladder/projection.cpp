// projection.cpp — see projection.h.
#include "ladder/projection.h"

namespace mt::ladder {

Allocation compute_optimal(const Law& law, double C, double G) {
  Allocation a;
  if (!(law.alpha > 0) || !(law.beta > 0)) return a;
  const double A_G = law.sparsity == Sparsity::kNone ? law.A : law.A / std::pow(G, law.gamma);
  const double K = std::pow(law.alpha * A_G / (law.beta * law.B), 1.0 / (law.alpha + law.beta));
  a.N = K * std::pow(C / 6.0, law.beta / (law.alpha + law.beta));
  a.D = C / (6.0 * a.N);
  a.loss = law_loss(law, a.N, a.D, G);
  return a;
}

Allocation at_tokens_per_param(const Law& law, double C, double R, double G) {
  const double N = std::sqrt(C / (6.0 * R));
  return at_size(law, N, R * N, G);
}

Allocation at_size(const Law& law, double N, double D, double G) {
  Allocation a;
  a.N = N;
  a.D = D;
  a.loss = law_loss(law, N, D, G);
  return a;
}

}  // namespace mt::ladder
