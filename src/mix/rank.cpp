// rank.cpp — see rank.h.
#include "mix/rank.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/check.h"

namespace mt::mix {

double pearson(const std::vector<double>& a, const std::vector<double>& b) {
  MT_CHECK(a.size() == b.size(), "a has {} entries, b {}", a.size(), b.size());
  const size_t n = a.size();
  if (n < 2) return NAN;
  const double ma = std::accumulate(a.begin(), a.end(), 0.0) / double(n);
  const double mb = std::accumulate(b.begin(), b.end(), 0.0) / double(n);
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < n; ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  if (saa == 0 || sbb == 0) return NAN;
  return sab / std::sqrt(saa * sbb);
}

std::vector<double> average_ranks(const std::vector<double>& v) {
  const size_t n = v.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t i, size_t j) { return v[i] < v[j]; });
  std::vector<double> r(n);
  for (size_t s = 0; s < n;) {
    size_t e = s + 1;
    while (e < n && v[order[e]] == v[order[s]]) ++e;
    const double avg = 0.5 * double(s + 1 + e);  // mean of ranks s+1 .. e
    for (size_t k = s; k < e; ++k) r[order[k]] = avg;
    s = e;
  }
  return r;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  MT_CHECK(a.size() == b.size(), "a has {} entries, b {}", a.size(), b.size());
  return pearson(average_ranks(a), average_ranks(b));
}

}  // namespace mt::mix
