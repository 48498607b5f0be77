// topic_metrics.cpp — see topic_metrics.h.
#include "data/topics/topic_metrics.h"

#include <cmath>
#include <map>

#include "core/check.h"

namespace mt {
namespace {

struct Table {
  std::map<std::pair<int32_t, int32_t>, int64_t> joint;
  std::map<int32_t, int64_t> a, b;
  double n = 0;
};

Table contingency(const std::vector<int32_t>& x, const std::vector<int32_t>& y) {
  MT_CHECK(x.size() == y.size(), "{} vs {} labels", x.size(), y.size());
  Table t;
  for (size_t i = 0; i < x.size(); ++i) {
    ++t.joint[{x[i], y[i]}];
    ++t.a[x[i]];
    ++t.b[y[i]];
  }
  t.n = double(x.size());
  return t;
}

double entropy(const std::map<int32_t, int64_t>& m, double n) {
  double h = 0;
  for (const auto& [k, c] : m) h -= double(c) / n * std::log(double(c) / n);
  return h;
}

}  // namespace

double nmi(const std::vector<int32_t>& clusters, const std::vector<int32_t>& truth) {
  const Table t = contingency(clusters, truth);
  if (t.n == 0) return 1.0;
  const double ha = entropy(t.a, t.n), hb = entropy(t.b, t.n);
  if (ha == 0 && hb == 0) return 1.0;
  double mi = 0;
  for (const auto& [ab, c] : t.joint) {
    const double p = double(c) / t.n;
    mi += p * std::log(p / (double(t.a.at(ab.first)) / t.n * double(t.b.at(ab.second)) / t.n));
  }
  return std::max(0.0, mi / (0.5 * (ha + hb)));
}

double purity(const std::vector<int32_t>& clusters, const std::vector<int32_t>& truth) {
  const Table t = contingency(clusters, truth);
  if (t.n == 0) return 1.0;
  std::map<int32_t, int64_t> majority;
  for (const auto& [ab, c] : t.joint) majority[ab.first] = std::max(majority[ab.first], c);
  int64_t s = 0;
  for (const auto& [k, c] : majority) s += c;
  return double(s) / t.n;
}

}  // namespace mt
