// sampling.cpp — softmax in double over the candidates sorted by probability
// (ties to the lower id), truncated by top-k and top-p, then one uniform draw.
#include "model/sampling.h"

#include <algorithm>
#include <cmath>

#include "core/rng.h"

namespace mt {

int32_t sample_token(const float* logits, int64_t V, const SamplingOptions& o, uint64_t stream, uint64_t counter,
                     std::vector<std::pair<float, int32_t>>& c) {
  if (o.temperature <= 0.0) return int32_t(std::max_element(logits, logits + V) - logits);
  c.resize(size_t(V));
  for (int64_t i = 0; i < V; ++i) c[size_t(i)] = {logits[i], int32_t(i)};
  std::sort(c.begin(), c.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  size_t n = c.size();
  if (o.top_k > 0) n = std::min(n, size_t(o.top_k));
  std::vector<double> p(n);
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += p[i] = std::exp((double(c[i].first) - double(c[0].first)) / o.temperature);
  if (o.top_p < 1.0) {
    double cum = 0.0;
    size_t keep = 0;
    while (keep < n && cum < o.top_p * sum) cum += p[keep++];
    n = std::max<size_t>(keep, 1);
    sum = 0.0;
    for (size_t i = 0; i < n; ++i) sum += p[i];
  }
  uint32_t w[4];
  philox_block(o.seed, stream, counter, w);
  const double u = double(uniform01(w[0])) * sum;
  double cum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    cum += p[i];
    if (u < cum) return c[i].second;
  }
  return c[n - 1].second;
}

}  // namespace mt
