// dist_stream_store_test.cpp — the pieces of weight streaming below the trainer:
// the Stager's background copies (exact bytes, tickets, several threads, a
// destructor that waits) and FloatBuffer's file-mapped tier (zeros at
// first, writes reach the file, a bad directory is an error naming it), and
// the magnitude pruning of sparse streaming against a sort-based reference.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <vector>

#include "core/float_buffer.h"
#include "dist/stager.h"
#include "kernels/cpu/magnitude_prune.h"

namespace mt {
namespace {

std::vector<float> ramp(int64_t n, float from) {
  std::vector<float> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), from);
  return v;
}

TEST(Stager, CopiesExactlyTheSourceBytesOnAnyThreadCount) {
  for (int64_t threads : {1, 2, 3}) {
    Stager s(threads);
    // Sizes around the chunking threshold (65536 floats) and an empty copy.
    std::vector<std::vector<float>> src, dst;
    std::vector<Stager::Ticket> tickets;
    for (int64_t n : {0, 1, 1000, 65536, 65537, 300001}) {
      src.push_back(ramp(n, float(n)));
      dst.emplace_back(size_t(n), -1.0f);
    }
    for (size_t i = 0; i < src.size(); ++i) tickets.push_back(s.copy(dst[i].data(), src[i].data(), int64_t(src[i].size())));
    for (size_t i = src.size(); i-- > 0;) {
      EXPECT_GE(s.wait(tickets[i]), 0.0);
      EXPECT_EQ(0, std::memcmp(dst[i].data(), src[i].data(), src[i].size() * sizeof(float)))
          << threads << " threads, copy " << i;
    }
    for (size_t i = 1; i < tickets.size(); ++i) EXPECT_GT(tickets[i], tickets[i - 1]);
  }
}

TEST(Stager, WaitAllAndTheDestructorLeaveNoCopyInFlight) {
  std::vector<float> src = ramp(1 << 20, 0.5f), a(src.size()), b(src.size());
  {
    Stager s(2);
    s.copy(a.data(), src.data(), int64_t(src.size()));
    s.wait_all();
    EXPECT_EQ(a, src);
    s.copy(b.data(), src.data(), int64_t(src.size()));
  }  // destroyed with a copy queued: it finishes first
  EXPECT_EQ(b, src);
}

TEST(FloatBuffer, HeapAssignAndMove) {
  FloatBuffer a;
  a.assign(5, 2.0f);
  EXPECT_FALSE(a.mapped());
  EXPECT_EQ(a.size(), 5);
  FloatBuffer b = std::move(a);
  EXPECT_EQ(b.size(), 5);
  EXPECT_EQ(b[4], 2.0f);
  EXPECT_EQ(a.size(), 0);
}

TEST(FloatBuffer, MappedFileStartsAtZeroAndHoldsWhatIsWritten) {
  const std::string dir = ::testing::TempDir() + "float_buffer_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/x.f32";
  {
    FloatBuffer f;
    ASSERT_TRUE(f.map_file(path, 1000).is_ok());
    EXPECT_TRUE(f.mapped());
    EXPECT_EQ(f.size(), 1000);
    for (int64_t i = 0; i < f.size(); ++i) ASSERT_EQ(f[i], 0.0f);
    for (int64_t i = 0; i < f.size(); ++i) f[i] = float(i) * 0.25f;
    FloatBuffer moved = std::move(f);  // the mapping moves with it
    EXPECT_EQ(moved[999], 249.75f);
  }
  std::ifstream in(path, std::ios::binary);
  std::vector<float> back(1000);
  in.read(reinterpret_cast<char*>(back.data()), std::streamsize(back.size() * sizeof(float)));
  ASSERT_TRUE(in.good());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(back[size_t(i)], float(i) * 0.25f) << i;
  // Re-mapping truncates: a store is rebuilt, never trusted after a crash.
  FloatBuffer again;
  ASSERT_TRUE(again.map_file(path, 10).is_ok());
  EXPECT_EQ(again[9], 0.0f);
  std::filesystem::remove_all(dir);
}

TEST(FloatBuffer, MissingDirectoryIsAnErrorNamingThePath) {
  FloatBuffer f;
  const Status s = f.map_file("/nonexistent-moetrain-dir/params.f32", 10);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("/nonexistent-moetrain-dir/params.f32"), std::string::npos) << s.message();
  EXPECT_EQ(f.size(), 0);
}

// Reference: sort indices by (|w| descending, index ascending), keep the first `keep`.
std::vector<float> prune_reference(std::vector<float> w, int64_t keep) {
  std::vector<int64_t> idx(w.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return std::fabs(w[size_t(a)]) > std::fabs(w[size_t(b)]); });
  for (size_t i = size_t(std::max<int64_t>(keep, 0)); i < idx.size(); ++i) w[size_t(idx[i])] = 0.0f;
  return w;
}

TEST(MagnitudePrune, KeepsTheLargestMagnitudesWithTiesInIndexOrder) {
  std::vector<float> scratch;
  // Distinct values, many ties (a few levels), zeros, and both signs.
  std::vector<std::vector<float>> inputs;
  std::vector<float> distinct(1000), ties(1000), zeros(200, 0.0f);
  for (int i = 0; i < 1000; ++i) {
    distinct[size_t(i)] = float((i * 7919) % 1000 - 500) * 0.01f;
    ties[size_t(i)] = float((i * 31) % 5 - 2);
  }
  zeros[5] = 3.0f;
  zeros[150] = -3.0f;
  inputs = {distinct, ties, zeros};
  for (const auto& in : inputs)
    for (int64_t keep : {int64_t(0), int64_t(1), int64_t(2), int64_t(in.size() / 4), int64_t(in.size() / 2),
                         int64_t(in.size() - 1), int64_t(in.size())}) {
      std::vector<float> w = in;
      scratch.assign(in.size(), 0.0f);
      const int64_t nz = prune_to_largest(w.data(), int64_t(w.size()), keep, scratch.data());
      const std::vector<float> want = prune_reference(in, keep);
      EXPECT_EQ(w, want) << "keep " << keep << " of " << in.size();
      int64_t count = 0;
      for (float x : want) count += x != 0.0f ? 1 : 0;
      EXPECT_EQ(nz, count);
      EXPECT_LE(nz, keep);
    }
  EXPECT_EQ(sparse_wire_bytes(1000, 500), 125 + 2000);  // 1000-bit bitmap + 500 fp32 values
  EXPECT_EQ(sparse_wire_bytes(9, 0), 2);
}

}  // namespace
}  // namespace mt
