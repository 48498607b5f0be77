// quality_levels.cpp — one sort per call; NaN is mapped to -inf before any
// comparison so the orderings are strict weak orders.
#include "data/quality/quality_levels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/check.h"

namespace mt {
namespace {
inline double rank_key(double x) { return std::isnan(x) ? -std::numeric_limits<double>::infinity() : x; }
}  // namespace

std::vector<double> rank_percentiles(const std::vector<double>& score) {
  const int64_t n = int64_t(score.size());
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const double x = rank_key(score[size_t(a)]), y = rank_key(score[size_t(b)]);
    return x != y ? x < y : a < b;
  });
  std::vector<double> pct(static_cast<size_t>(n));
  for (int64_t i = 0; i < n;) {
    int64_t j = i;
    while (j < n && rank_key(score[size_t(order[size_t(j)])]) == rank_key(score[size_t(order[size_t(i)])])) ++j;
    const double mid = 0.5 * double(i + j - 1);  // average rank of the tie group
    for (int64_t k = i; k < j; ++k) pct[size_t(order[size_t(k)])] = (mid + 0.5) / double(n);
    i = j;
  }
  return pct;
}

std::vector<int32_t> quantile_levels_within(const std::vector<double>& score, const std::vector<int32_t>& group,
                                            const std::vector<uint64_t>& tie_key, int64_t n_levels) {
  MT_CHECK(score.size() == group.size() && score.size() == tie_key.size() && n_levels >= 1,
           "{} scores, {} groups, {} keys, {} levels", score.size(), group.size(), tie_key.size(), n_levels);
  const int64_t n = int64_t(score.size());
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    if (group[size_t(a)] != group[size_t(b)]) return group[size_t(a)] < group[size_t(b)];
    const double x = rank_key(score[size_t(a)]), y = rank_key(score[size_t(b)]);
    if (x != y) return x < y;
    if (tie_key[size_t(a)] != tie_key[size_t(b)]) return tie_key[size_t(a)] < tie_key[size_t(b)];
    return a < b;
  });
  std::vector<int32_t> level(size_t(n), 0);
  for (int64_t i = 0; i < n;) {
    int64_t j = i;
    while (j < n && group[size_t(order[size_t(j)])] == group[size_t(order[size_t(i)])]) ++j;
    const int64_t m = j - i;
    for (int64_t r = 0; r < m; ++r) level[size_t(order[size_t(i + r)])] = int32_t((__int128)r * n_levels / m);
    i = j;
  }
  return level;
}

}  // namespace mt
