// kernels_bulk_copy_test.cpp — bulk_copy and bulk_fill (bulk_copy.h) write
// exactly the range they are given, element for element, on both sides of the
// size at which they go parallel, and inside a caller's parallel region.
#include <gtest/gtest.h>

#include <omp.h>

#include <vector>

#include "kernels/cpu/bulk_copy.h"
#include "support/random.h"

namespace mt {
namespace {

using testing::randn;

constexpr float kGuard = -7.0f;  // the values just outside the range must keep

void expect_copied(int64_t n, bool nested) {
  const auto in = randn(n, 1.0f, 31);
  std::vector<float> out(size_t(n) + 2, kGuard);
  if (nested) {
#pragma omp parallel num_threads(2)
    {
#pragma omp single
      bulk_copy(out.data() + 1, in.data(), n);
    }
  } else {
    bulk_copy(out.data() + 1, in.data(), n);
  }
  EXPECT_EQ(out.front(), kGuard);
  EXPECT_EQ(out.back(), kGuard);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[size_t(i) + 1], in[size_t(i)]) << "element " << i;
}

void expect_filled(int64_t n, bool nested) {
  std::vector<float> out(size_t(n) + 2, kGuard);
  if (nested) {
#pragma omp parallel num_threads(2)
    {
#pragma omp single
      bulk_fill(out.data() + 1, n, 0.5f);
    }
  } else {
    bulk_fill(out.data() + 1, n, 0.5f);
  }
  EXPECT_EQ(out.front(), kGuard);
  EXPECT_EQ(out.back(), kGuard);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[size_t(i) + 1], 0.5f) << "element " << i;
}

TEST(BulkCopy, CopiesAndFillsExactlyTheRangeSerialParallelAndNested) {
  // Short (serial), just past the parallel threshold with a ragged end, and a
  // residual stream's size.
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(1000), int64_t(65537), int64_t(4096) * 512 + 3})
    for (bool nested : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "n " << n << " nested " << nested);
      expect_copied(n, nested);
      expect_filled(n, nested);
    }
}

}  // namespace
}  // namespace mt
