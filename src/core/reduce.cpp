// reduce.cpp — fixed-chunk deterministic reductions.
#include "core/reduce.h"

#include <vector>

namespace mt {
namespace {
template <typename F>
double chunked(int64_t n, F&& f) {
  const int64_t chunks = reduction_chunks(n);
  std::vector<double> part(chunks, 0.0);
#pragma omp parallel for schedule(static) if (n > 100000)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t lo = n * c / chunks, hi = n * (c + 1) / chunks;
    double acc = 0.0;
    for (int64_t i = lo; i < hi; ++i) acc += f(i);
    part[c] = acc;
  }
  double total = 0.0;
  for (double p : part) total += p;
  return total;
}
}  // namespace

double sum_squares(const float* x, int64_t n) {
  return chunked(n, [x](int64_t i) { return double(x[i]) * double(x[i]); });
}
double sum(const float* x, int64_t n) {
  return chunked(n, [x](int64_t i) { return double(x[i]); });
}

}  // namespace mt
