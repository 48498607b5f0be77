// reduce.h — reductions whose result does not depend on the thread count:
// work is cut into a fixed number of chunks (a function of the size only),
// each chunk is summed serially, and chunk results are added in order.
#pragma once
#include <cstdint>

namespace mt {

// Number of fixed chunks used to split `n` rows for deterministic reduction.
inline int64_t reduction_chunks(int64_t n) { return n < 64 ? (n > 0 ? n : 1) : 64; }

// Sum of squares of x[0..n) in double, thread-count invariant.
double sum_squares(const float* x, int64_t n);

// Sum of x[0..n) in double, thread-count invariant.
double sum(const float* x, int64_t n);

}  // namespace mt
