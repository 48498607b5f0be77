// reliability.cpp — see reliability.h.
#include "plan/reliability.h"

#include <algorithm>
#include <cmath>

namespace mt::plan {

double young_interval_s(double write_s, double mtbf_s) { return std::sqrt(2.0 * write_s * mtbf_s); }

double daly_interval_s(double write_s, double mtbf_s) {
  if (write_s >= 2.0 * mtbf_s) return mtbf_s;
  const double r = write_s / (2.0 * mtbf_s);
  return std::sqrt(2.0 * write_s * mtbf_s) * (1.0 + std::sqrt(r) / 3.0 + r / 9.0) - write_s;
}

double expected_wall_s(double solve_s, double tau_s, double write_s, double restart_s, double mtbf_s) {
  const double M = mtbf_s;
  // expm1 keeps precision when (tau + d) << M.
  return M * std::exp(restart_s / M) * std::expm1((tau_s + write_s) / M) * solve_s / tau_s;
}

double checkpoint_goodput(double tau_s, double write_s, double restart_s, double mtbf_s) {
  return 1.0 / expected_wall_s(1.0, tau_s, write_s, restart_s, mtbf_s);
}

namespace {
double log_choose(int64_t n, int64_t k) {
  return std::lgamma(double(n) + 1) - std::lgamma(double(k) + 1) - std::lgamma(double(n - k) + 1);
}
}  // namespace

double binomial_cdf(int64_t k, int64_t n, double p) {
  if (k < 0) return 0.0;
  if (k >= n) return 1.0;
  if (p <= 0) return 1.0;
  if (p >= 1) return 0.0;
  double s = 0;
  for (int64_t i = 0; i <= k; ++i)
    s += std::exp(log_choose(n, i) + double(i) * std::log(p) + double(n - i) * std::log1p(-p));
  return std::min(1.0, s);
}

double at_least_k_of_n(int64_t need, int64_t n, double q) {
  if (need <= 0) return 1.0;
  if (need > n) return 0.0;
  // P(up >= need) = P(down <= n - need), down ~ Binomial(n, 1 - q).
  return binomial_cdf(n - need, n, 1.0 - q);
}

Availability availability(const RackPolicy& p) {
  Availability a;
  a.rack_up = p.rack_mtbf_h > 0 ? 1.0 / (1.0 + p.rack_repair_h / p.rack_mtbf_h) : 1.0;
  double gpus_ok = 1.0;
  const bool sla_covers = p.sla_min_gpus_up > 0 && p.gpus_needed_per_rack <= p.sla_min_gpus_up;
  if (!sla_covers) {
    const double down = (p.gpu_repair_h / p.gpu_mtbf_h) / (1.0 + p.gpu_repair_h / p.gpu_mtbf_h);
    gpus_ok = binomial_cdf(p.gpus_per_rack - p.gpus_needed_per_rack, p.gpus_per_rack, down);
  }
  a.rack_usable = a.rack_up * gpus_ok;
  a.job = at_least_k_of_n(p.racks_used, p.racks_owned, a.rack_usable);
  return a;
}

}  // namespace mt::plan
