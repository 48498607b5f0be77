// kernels_weight_pack_test.cpp — weight_pack.h against oneDNN's own reorder:
// for the layouts this CPU's matmul asks for, on the experts' and projections'
// shapes and ragged ones (K and N not whole blocks, odd K), B as stored and
// transposed, fp32 and (where native) bf16: the same bytes, padding included,
// into line-aligned memory (streamed out) and unaligned memory alike.
// A CPU whose matmul asks for a layout the packer does not know (AMX tiles,
// AVX2) takes oneDNN's reorder, which pack_weight() is checked to call.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/weight_pack.h"

namespace mt {
namespace {

using dt = dnnl::memory::data_type;

struct Case {
  int64_t M, K, N;
  bool transposed;  // B read transposed (y = x Wᵀ, W stored N x K), else as stored (K x N)
};

// The layout the matmul (M x K) * (K x N) asks for its weights.
dnnl::memory::desc layout_for(const dnnl::engine& eng, const Case& c, dt type) {
  const dnnl::memory::desc a({c.M, c.K}, type, dnnl::memory::format_tag::ab);
  const dnnl::memory::desc b({c.K, c.N}, type, dnnl::memory::format_tag::any);
  const dnnl::memory::desc out({c.M, c.N}, dt::f32, dnnl::memory::format_tag::ab);
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, out), eng).weights_desc();
}

dnnl::memory::desc plain_for(const Case& c, dt type) {
  return dnnl::memory::desc({c.K, c.N}, type,
                            c.transposed ? dnnl::memory::dims{1, c.K} : dnnl::memory::dims{c.N, 1});
}

// Distinct bit patterns per element (bf16: every 16-bit value of an fp32 seen as two halves).
std::vector<uint32_t> pattern(int64_t words) {
  std::vector<uint32_t> v(static_cast<size_t>(words));
  uint32_t x = 0x9e3779b9u;
  for (auto& w : v) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    w = (x & 0x7f7fffffu) | 0x00800000u;  // finite, normal
  }
  return v;
}

TEST(WeightPack, SameBytesAsOnednnsReorder) {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  std::vector<dt> types{dt::f32};
  if (gemm_native_bf16()) types.push_back(dt::bf16);
  const Case cases[] = {{192, 512, 704, true},  {192, 352, 512, true},  {192, 512, 352, false},
                        {192, 704, 512, false}, {512, 512, 8192, true}, {64, 37, 70, true},
                        {64, 37, 70, false},    {64, 33, 130, true},    {64, 96, 24, false}};
  int packed_by_us = 0;
  for (dt type : types)
    for (const Case& c : cases) {
      const dnnl::memory::desc layout = layout_for(eng, c, type), plain = plain_for(c, type);
      const size_t elem = type == dt::f32 ? 4 : 2;
      const std::vector<uint32_t> src = pattern(int64_t(c.K * c.N * elem + 3) / 4);
      std::vector<uint8_t> theirs(layout.get_size(), 0x5a);
      dnnl::memory from(plain, eng, const_cast<uint32_t*>(src.data())), to(layout, eng, theirs.data());
      dnnl::reorder(from, to).execute(strm, from, to);
      strm.wait();
      // At a cache line (blocks assembled in L1 and streamed out, as into a
      // packed copy's memory) and 4 bytes past one (written in place).
      std::vector<uint8_t> buffer(layout.get_size() + 128, 0xa5);
      uint8_t* line = buffer.data() + (64 - reinterpret_cast<uintptr_t>(buffer.data()) % 64) % 64;
      for (uint8_t* ours : {line, line + 4}) {
        pack_weight(ours, layout, src.data(), plain, eng, strm);
        EXPECT_EQ(0, std::memcmp(ours, theirs.data(), theirs.size()))
            << (type == dt::f32 ? "fp32 " : "bf16 ") << c.K << " x " << c.N << (c.transposed ? " transposed" : "")
            << (ours == line ? ", line-aligned" : ", unaligned");
      }
      packed_by_us += blocked_layout_of(layout).has_value();
    }
  if (packed_by_us == 0) GTEST_SKIP() << "this CPU's matmul asks for no layout the packer knows: oneDNN packs";
}

// The copies themselves, on layouts set by hand (whatever this CPU's matmul
// would ask for): a transposed fp32 block and a bf16 pair block by element.
TEST(WeightPack, BlocksHoldTheElementsWhereTheLayoutSays) {
  const int64_t K = 37, N = 70;
  const BlockedLayout f{16, 64, 1, 48, 128}, h{32, 64, 2, 64, 128};
  std::vector<float> w(size_t(N * K));  // W stored N x K: B(k, n) = w[n * K + k]
  for (int64_t i = 0; i < N * K; ++i) w[size_t(i)] = float(i + 1);
  std::vector<float> out(size_t(f.k_padded * f.n_padded), -1.0f);
  pack_blocked_f32(out.data(), w.data(), K, N, 1, K, f);
  std::vector<uint16_t> wb(size_t(N * K));
  for (int64_t i = 0; i < N * K; ++i) wb[size_t(i)] = uint16_t(i + 1);
  std::vector<uint16_t> outb(size_t(h.k_padded * h.n_padded), 0xffff);
  pack_blocked_bf16(outb.data(), wb.data(), K, N, 1, K, h);
  for (int64_t k = 0; k < f.k_padded; ++k)
    for (int64_t n = 0; n < f.n_padded; ++n) {
      const bool real = k < K && n < N;
      const int64_t blk = (n / 64) * (f.k_padded / 16) + k / 16;
      EXPECT_EQ(out[size_t(blk * 1024 + (k % 16) * 64 + n % 64)], real ? float(n * K + k + 1) : 0.0f);
    }
  for (int64_t k = 0; k < h.k_padded; ++k)
    for (int64_t n = 0; n < h.n_padded; ++n) {
      const bool real = k < K && n < N;
      const int64_t blk = (n / 64) * (h.k_padded / 32) + k / 32, kin = k % 32;
      EXPECT_EQ(outb[size_t(blk * 2048 + ((kin / 2) * 64 + n % 64) * 2 + kin % 2)], real ? uint16_t(n * K + k + 1) : 0);
    }
}

}  // namespace
}  // namespace mt
