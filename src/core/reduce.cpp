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
  const int64_t chunks = reduction_chunks(n);
  std::vector<double> part(chunks, 0.0);
#pragma omp parallel for schedule(static) if (n > 100000)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t lo = n * c / chunks, hi = n * (c + 1) / chunks;
    // Vectorised (8 double lanes, fixed association for this binary): the
    // serial chain of dependent adds was latency-bound.
    double acc = 0.0;
#pragma omp simd reduction(+ : acc)
    for (int64_t i = lo; i < hi; ++i) acc += double(x[i]) * double(x[i]);
    part[c] = acc;
  }
  double total = 0.0;
  for (double p : part) total += p;
  return total;
}
double sum(const float* x, int64_t n) {
  return chunked(n, [x](int64_t i) { return double(x[i]); });
}

}  // namespace mt
