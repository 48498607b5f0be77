// gemm.cpp — oneDNN matmul with a per-shape primitive cache.
// Why oneDNN: on the 2-core Sapphire Rapids machine it measured ~300 GFLOP/s
// fp32 and 1100-1350 GFLOP/s bf16 (AMX) on the model's shapes; OpenBLAS
// 270-300 fp32 and no bf16 GEMM in Debian's build (docs/performance.md).
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_fault.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "core/bf16.h"
#include "core/check.h"
#include "core/phase_timer.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/weight_pack.h"

namespace mt {
namespace {

// (M, N, K, ta, tb, lda, ldb, ldc, beta, precision, the OpenMP thread budget it was planned for, whether B is
// read packed)
using Key = std::tuple<int64_t, int64_t, int64_t, int, int, int64_t, int64_t, int64_t, int, int, int, int>;

// Whether this CPU has a native bf16 matmul in oneDNN (AVX512-BF16/AMX, or
// AVX-512 emulation). Debian's oneDNN 2.6 has none on AVX2-only machines
// (e.g. AMD Zen 3): there kBf16 multiplies bf16-rounded operands held in
// fp32 through the fp32 primitive. That is the same arithmetic (a product of
// two bf16 values is exact in fp32, accumulation is fp32), only slower.
bool probe_native_bf16(const dnnl::engine& eng) {
  try {
    const auto bf = dnnl::memory::data_type::bf16, f32 = dnnl::memory::data_type::f32;
    dnnl::memory::desc a({16, 32}, bf, dnnl::memory::format_tag::ab), b({32, 16}, bf, dnnl::memory::format_tag::ab),
        c({16, 16}, f32, dnnl::memory::format_tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), eng);
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

// A planned product, the scratchpad it needs when the caller provides it,
// and the layout it reads B in (the blocked one it chose, when planned for packed weights).
struct CachedMatmul {
  dnnl::matmul prim;
  dnnl::memory::desc scratchpad;
  dnnl::memory::desc weights;
  // Planned for packed weights: whether reading a packed copy pays. Only where that changes the layout (a
  // kernel that reads the weights as stored, as oneDNN 2.6's AVX2 fp32 path may, would gain a copy for
  // nothing) and keeps the kernel the plain plan runs (another kernel could give other bits than the plain
  // path that FSDP, streaming and train.pack_weights = false take). Decided once, when planned.
  bool packing_pays = false;
  // Planned to add a residual (binary post-op): whether it is the kernel the beta-1 plan (sum post-op) runs,
  // so that gemm_add gives the bits of a copy and beta 1. Where it is not, gemm_add takes that copy.
  bool adds_like_sum = true;
};

// Every primitive takes a caller-provided scratchpad (the calling thread's):
// oneDNN's own is shared by every primitive unless the library was built for
// concurrent execution, so two threads running products at once (tasks of
// gemm_on_thread; RL's background generation beside the training) would
// pack their operands into the same memory.
struct Engine {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  std::map<Key, CachedMatmul> cache;
  std::map<Key, CachedMatmul> serial_cache;  // planned for one thread (gemm_on_thread)
  std::mutex mu;
  bool native_bf16 = probe_native_bf16(eng);
};

Engine& engine() {
  static Engine e;
  return e;
}

struct Shadow {
  const float* base = nullptr;
  const bf16* data = nullptr;
  int64_t n = 0;
};
Shadow g_shadow;

// Weights packed once per version (gemm_register_packed_weights). oneDNN's
// matmul, given B in its plain layout, reorders it into the blocked layout
// its kernel reads inside every call: every row tile of an expert and every
// 512-token chunk of the vocabulary head paid for it again. A weight's
// packed copy is made on the first product that reads it after
// gemm_weights_changed() and reused by every later one (bench/
// gemm_packing_bench.cpp: 1.01-1.17x per product on Zen 4). The kernel is
// the same either way, so the bits are too (GemmPacked.SameBitsAsPlain).
struct PackedCopy {
  dnnl::memory::desc layout;
  dnnl::memory mem;
  uint64_t version = 0;  // 0: never filled
  std::mutex mu;         // row tiles of one expert on several threads: one fills it
  // What gemm_pack_final_weights needs to fill it without a product: the
  // operand's plain descriptor, its offset, the elements it spans, and
  // whether it is read from the bf16 shadow; and how many of those elements
  // the update at version `final_at` has reported final so far (an operand
  // may span several tensors: the fused QKV, an expert's gate and up).
  dnnl::memory::desc plain;
  int64_t off = 0, span = 0;
  bool from_shadow = false;
  uint64_t final_at = 0;
  int64_t final_elems = 0;
};
struct PackedWeights {
  const float* base = nullptr;
  int64_t n = 0;
  std::atomic<uint64_t> version{1};
  // (offset, precision, tb, ldb, K, N) -> a copy per layout asked for
  std::map<std::tuple<int64_t, int, int, int64_t, int64_t, int64_t>, std::vector<std::unique_ptr<PackedCopy>>> copies;
  std::mutex mu;
  int64_t bytes = 0;
  int64_t max_span = 0;  // the longest copy: where the copies that overlap a range start
};
PackedWeights g_packed;

// gemm_inject_relative_error: 0 = off. Read once per call, after the product.
float g_inject_rel = 0.0f;

void perturb_output(float* C, const GemmShape& s) {
  const float f = 1.0f + g_inject_rel;
  for (int64_t i = 0; i < s.M; ++i)
    for (int64_t j = 0; j < s.N; ++j) C[i * s.ldc + j] *= f;
}

// The shadow copy of a rows x cols operand with leading dim ld, or null.
const bf16* shadow_of(const float* p, int64_t rows, int64_t cols, int64_t ld) {
  if (!g_shadow.data || p < g_shadow.base) return nullptr;
  const int64_t off = p - g_shadow.base;
  if (off + (rows - 1) * ld + cols > g_shadow.n) return nullptr;
  return g_shadow.data + off;
}

struct Scratch {
  // An operand in the form the matmul reads: bf16 (native), or bf16-rounded
  // fp32 (no native bf16 matmul).
  struct Prepared {
    std::vector<bf16> b16;
    std::vector<float> f32;
  };
  Prepared a, b, dy;          // dy: linear_backward's gradient, read by both products
  std::vector<float> bt;      // a transposed fp32 B for the skinny path
  std::vector<float> slice;   // the skinny weight gradient's slice of B, this thread's columns
};
// Per-thread, grow-only operand conversions (docs/kernels.md).
thread_local Scratch scratch;

// What the matmul reads for one operand, and its leading dimension.
struct Operand {
  const void* data;
  int64_t ld;
};

// A rows x cols operand as stored (leading dim ld) in the form precision p
// and this CPU need: itself (fp32, or already in that form), the registered
// shadow, or a dense converted copy in `buf`.
Operand prepare(GemmInput in, int64_t rows, int64_t cols, int64_t ld, MatmulPrecision p, Scratch::Prepared& buf) {
  if (in.form != OperandForm::kFp32) {
    MT_CHECK(in.form == operand_form(p), "a GEMM input held for another precision");
    return {in.data, ld};
  }
  const float* X = static_cast<const float*>(in.data);
  if (p == MatmulPrecision::kFp32) return {X, ld};
  if (!engine().native_bf16) {
    if (int64_t(buf.f32.size()) < rows * cols) buf.f32.resize(rows * cols);
    round_f32_to_bf16(buf.f32.data(), X, rows, cols, ld);
    return {buf.f32.data(), cols};
  }
  if (const bf16* sx = shadow_of(X, rows, cols, ld)) return {sx, ld};
  if (int64_t(buf.b16.size()) < rows * cols) buf.b16.resize(rows * cols);
  convert_f32_to_bf16(buf.b16.data(), X, rows, cols, ld);
  return {buf.b16.data(), cols};
}

// Rows and columns of op(A) and op(B) as stored.
int64_t a_rows(const GemmShape& s) { return s.ta == Trans::kNo ? s.M : s.K; }
int64_t a_cols(const GemmShape& s) { return s.ta == Trans::kNo ? s.K : s.M; }
int64_t b_rows(const GemmShape& s) { return s.tb == Trans::kNo ? s.K : s.N; }
int64_t b_cols(const GemmShape& s) { return s.tb == Trans::kNo ? s.N : s.K; }

dnnl::memory::desc operand_desc(int64_t rows, int64_t cols, Trans t, int64_t ld,
                                dnnl::memory::data_type dt) {
  // Logical (rows x cols); stored transposed when t == kYes.
  dnnl::memory::dims strides = t == Trans::kNo ? dnnl::memory::dims{ld, 1} : dnnl::memory::dims{1, ld};
  return dnnl::memory::desc({rows, cols}, dt, strides);
}

// fp32 products with one dimension <= kSkinny (the router: E = 16 columns,
// or K = E) run through the register-blocked kernel in simd.h: oneDNN reached
// only 20-30 GFLOP/s on them. Each output block is owned by one task and
// summed in a fixed order, so results do not depend on the thread count.
constexpr int64_t kSkinny = 32;

bool use_skinny(const GemmShape& s, MatmulPrecision p) {
  return p == MatmulPrecision::kFp32 && (s.M <= kSkinny || s.N <= kSkinny || s.K <= kSkinny);
}

// A rows x cols operand as plain row-major: itself, or (when stored
// transposed, i.e. cols x rows with leading dim ld) a transposed copy in `buf`.
const float* row_major(const float* X, int64_t rows, int64_t cols, Trans t, int64_t& ld,
                       std::vector<float>& buf) {
  if (t == Trans::kNo) return X;
  if (int64_t(buf.size()) < rows * cols) buf.resize(rows * cols);
  simd::transpose(buf.data(), X, cols, rows, ld, cols);
  ld = cols;
  return buf.data();
}

void skinny_gemm(float* C, const float* A, const float* B, const GemmShape& s, float beta) {
  // A stored transposed is read in place (the router's weight gradient: A is
  // the layer's whole input, K = tokens): the strips take the same
  // multiply-adds, in the same order, as on a transposed copy.
  const bool ta = s.ta == Trans::kYes;
  int64_t ldb = s.ldb;
  const float* b = row_major(B, s.K, s.N, s.tb, ldb, scratch.bt);  // (K, N)
  constexpr int64_t kRows = 32, kCols = 128, kSlice = 256;
  const int64_t row_blocks = (s.M + kRows - 1) / kRows, col_blocks = (s.N + kCols - 1) / kCols;
  if (ta && row_blocks == 1) {
    // The router's weight gradient: K = tokens, one block of rows. Each
    // thread takes a run of column blocks; per slice of K it first copies
    // its columns of the slice's rows of B, row by row, into L2, then runs
    // its strips there. Straight from B, each strip's pass read two lines
    // of every 2 KB row, a new page every other row, which the prefetchers
    // do not follow: moe-512's layer took 1.2 ms with B in memory against
    // 0.24 ms in cache (0.61 ms copied; in the step 1.0-1.3 -> 0.5-0.64 ms,
    // AMD Zen 5). Each output still sums its k in order.
#pragma omp parallel
    {
      const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
      const int64_t first = col_blocks * t / threads, last = col_blocks * (t + 1) / threads;
      const int64_t c0 = first * kCols, cols = std::min(last * kCols, s.N) - c0;
      if (cols > 0) {
        float* c = C + c0;
        if (beta == 0.0f)
          for (int64_t r = 0; r < s.M; ++r) std::fill(c + r * s.ldc, c + r * s.ldc + cols, 0.0f);
        std::vector<float>& slice = scratch.slice;
        if (int64_t(slice.size()) < kSlice * cols) slice.resize(kSlice * cols);
        for (int64_t k0 = 0; k0 < s.K; k0 += kSlice) {
          const int64_t ks = std::min(kSlice, s.K - k0);
          for (int64_t k = 0; k < ks; ++k)
            std::copy(b + (k0 + k) * ldb + c0, b + (k0 + k) * ldb + c0 + cols, slice.data() + k * cols);
          for (int64_t b0 = 0; b0 < cols; b0 += kCols)
            simd::small_gemm_acc<true>(c + b0, A + k0 * s.lda, slice.data() + b0, s.M, std::min(kCols, cols - b0), ks,
                                       s.lda, cols, s.ldc);
        }
      }
    }
    return;
  }
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t rb = 0; rb < row_blocks; ++rb)
    for (int64_t cb = 0; cb < col_blocks; ++cb) {
      const int64_t r0 = rb * kRows, rows = std::min(kRows, s.M - r0);
      const int64_t c0 = cb * kCols, cols = std::min(kCols, s.N - c0);
      float* c = C + r0 * s.ldc + c0;
      // The next row block's rows of C, whole, asked into L2 as a block
      // starts: the tasks read C two lines of a row at a time, which the
      // prefetchers did not follow across pages (the router's input
      // gradient adds into 4,096 rows of 2 KB: 0.53-0.68 -> 0.40-0.44 ms a
      // layer in the moe-512 step on AMD Zen 5).
      if (cb == 0 && r0 + kRows < s.M)
        for (int64_t r = r0 + kRows; r < std::min(r0 + 2 * kRows, s.M); ++r)
          simd::prefetch_l2_write(C + r * s.ldc, s.N);
      if (beta == 0.0f)
        for (int64_t r = 0; r < rows; ++r) std::fill(c + r * s.ldc, c + r * s.ldc + cols, 0.0f);
      // K in slices, so the slice of B that each strip of the block streams
      // again stays in L2 (the router's weight gradient sums over every
      // token: K = tokens). Each output still sums its k in order: the same bits.
      for (int64_t k0 = 0; k0 < s.K; k0 += kSlice) {
        const int64_t ks = std::min(kSlice, s.K - k0);
        if (ta)
          simd::small_gemm_acc<true>(c, A + k0 * s.lda + r0, b + k0 * ldb + c0, rows, cols, ks, s.lda, ldb, s.ldc);
        else
          simd::small_gemm_acc(c, A + r0 * s.lda + k0, b + k0 * ldb + c0, rows, cols, ks, s.lda, ldb, s.ldc);
      }
    }
}

dnnl::memory::data_type operand_type(MatmulPrecision p) {
  return p == MatmulPrecision::kBf16 && engine().native_bf16 ? dnnl::memory::data_type::bf16
                                                             : dnnl::memory::data_type::f32;
}

// The descriptors of C = op(a) op(b) for shape s (leading dims filled in).
struct MatmulDescs {
  dnnl::memory::desc a, b, c;
};
MatmulDescs matmul_descs(const GemmShape& s, MatmulPrecision p) {
  const auto dt = operand_type(p);
  return {operand_desc(s.M, s.K, s.ta, s.lda, dt), operand_desc(s.K, s.N, s.tb, s.ldb, dt),
          dnnl::memory::desc({s.M, s.N}, dnnl::memory::data_type::f32, dnnl::memory::dims{s.ldc, 1})};
}

// The primitive for (s, beta, p) from `cache`, created on first use (by the
// calling thread, for its OpenMP thread budget). Holds the engine's lock.
// adds: C = op(A) op(B) + an addend shaped as C (a binary post-op), else beta's.
const CachedMatmul& cached_matmul(std::map<Key, CachedMatmul>& cache, const MatmulDescs& md, const GemmShape& s,
                                  float beta, MatmulPrecision p, bool packed = false, bool adds = false) {
  Engine& e = engine();
  const Key key{s.M,
                s.N,
                s.K,
                int(s.ta),
                int(s.tb),
                s.lda,
                s.ldb,
                s.ldc,
                adds ? 2 : int(beta),
                int(p),
                omp_get_max_threads(),
                int(packed)};
  std::lock_guard<std::mutex> lock(e.mu);
  auto it = cache.find(key);
  if (it == cache.end()) {
    auto attr_of = [&](bool binary_add, bool sum) {
      dnnl::primitive_attr attr;
      dnnl::post_ops po;
      if (binary_add) po.append_binary(dnnl::algorithm::binary_add, md.c);
      if (sum) po.append_sum(1.0f);
      if (binary_add || sum) attr.set_post_ops(po);
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      return attr;
    };
    const dnnl::primitive_attr attr = attr_of(adds, !adds && beta == 1.0f);
    const dnnl::memory::desc b =
        packed ? dnnl::memory::desc(md.b.dims(), md.b.data_type(), dnnl::memory::format_tag::any) : md.b;
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(md.a, b, md.c), attr, e.eng);
    bool pays = false;
    if (packed) {
      const dnnl::matmul::primitive_desc plain(dnnl::matmul::desc(md.a, md.b, md.c), attr, e.eng);
      pays = pd.weights_desc() != md.b && pd.impl_info_str() == plain.impl_info_str();
    }
    bool like_sum = true;
    if (adds)
      like_sum =
          pd.impl_info_str() ==
          dnnl::matmul::primitive_desc(dnnl::matmul::desc(md.a, b, md.c), attr_of(false, true), e.eng).impl_info_str();
    it = cache.emplace(key, CachedMatmul{dnnl::matmul(pd), pd.scratchpad_desc(), pd.weights_desc(), pays, like_sum})
             .first;
  }
  return it->second;
}

dnnl::stream& thread_stream() {
  thread_local dnnl::stream strm{engine().eng};
  return strm;
}

// Elements from op(B)'s first to its last, as stored (rows of ldb).
int64_t b_span(const GemmShape& s) { return s.tb == Trans::kNo ? (s.K - 1) * s.ldb + s.N : (s.N - 1) * s.ldb + s.K; }

// The offset of operand b (op(B) of shape s, as the matmul reads it) in the
// registered weights, or -1: b must lie wholly inside them, in the form
// precision p reads (the fp32 values, or the bf16 shadow of the same range).
// Emulated bf16 reads rounded copies, never the weights themselves.
int64_t weight_offset(const void* b, const GemmShape& s, MatmulPrecision p) {
  const PackedWeights& pw = g_packed;
  if (!pw.base) return -1;
  const bool bf = operand_type(p) == dnnl::memory::data_type::bf16;
  const char* region = bf ? reinterpret_cast<const char*>(g_shadow.data) : reinterpret_cast<const char*>(pw.base);
  if (!region || (bf && g_shadow.base != pw.base)) return -1;
  const char* at = static_cast<const char*>(b);
  const int64_t elt = bf ? 2 : 4;
  const int64_t span = b_span(s);
  if (at < region || (at - region) % elt != 0 || (at - region) / elt + span > pw.n) return -1;
  return (at - region) / elt;
}

// The packed copy of the weight at `off` (op(B) of shape s, stored as b_md at
// b) in `layout`, current for this version of the weights: filled from b on
// the calling thread's stream when stale.
const dnnl::memory& packed_weight(int64_t off, const void* b, const dnnl::memory::desc& b_md, const GemmShape& s,
                                  MatmulPrecision p, const dnnl::memory::desc& layout) {
  PackedWeights& pw = g_packed;
  PackedCopy* copy = nullptr;
  {
    std::lock_guard<std::mutex> lock(pw.mu);
    auto& list = pw.copies[{off, int(p), int(s.tb), s.ldb, s.K, s.N}];
    for (auto& c : list)
      if (c->layout == layout) copy = c.get();
    if (!copy) {
      list.push_back(std::make_unique<PackedCopy>());
      copy = list.back().get();
      copy->layout = layout;
      copy->mem = dnnl::memory(layout, engine().eng);
      copy->plain = b_md;
      copy->off = off;
      copy->span = b_span(s);
      copy->from_shadow = operand_type(p) == dnnl::memory::data_type::bf16;
      pw.bytes += int64_t(layout.get_size());
      pw.max_span = std::max(pw.max_span, copy->span);
    }
  }
  std::lock_guard<std::mutex> lock(copy->mu);
  const uint64_t now = pw.version.load();
  if (copy->version != now) {
    pack_weight(copy->mem.get_data_handle(), layout, b, b_md, engine().eng, thread_stream());
    copy->version = now;
  }
  return copy->mem;
}

// The calling thread's scratchpad, at least `bytes` long (grow-only; every
// product the thread runs uses it, one at a time).
void* thread_scratchpad(size_t bytes) {
  thread_local std::vector<char> buf;
  if (buf.size() < bytes) buf.resize(bytes);
  return buf.data();
}

// On the calling thread's stream, with its scratchpad; B from its packed
// copy when it is a registered weight and the primitive was planned for one.
void execute(const CachedMatmul& mm, const MatmulDescs& md, float* C, const void* a, const void* b,
             const dnnl::memory* b_packed = nullptr, const float* addend = nullptr) {
  dnnl::stream& strm = thread_stream();
  void* scratchpad = thread_scratchpad(mm.scratchpad.get_size());
  const dnnl::engine& eng = engine().eng;
  dnnl::memory a_mem(md.a, eng, const_cast<void*>(a));
  dnnl::memory b_mem = b_packed ? *b_packed : dnnl::memory(md.b, eng, const_cast<void*>(b));
  dnnl::memory c_mem(md.c, eng, C);
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}};
  args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(mm.scratchpad, eng, scratchpad));
  if (addend)
    args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                 dnnl::memory(md.c, eng, const_cast<float*>(addend)));
  mm.prim.execute(strm, args);
  strm.wait();
}

// gemm_on_thread's products are small and many (an attention tile is 128 x
// 176 x 64; a moe-512 step runs about 14,000 of them): looking each one up
// in the shared cache under its lock and wrapping every operand in a new
// dnnl::memory cost 1.8 us a call on AMD Zen 5, a fifth of such a product.
// Each thread keeps, per shape, the primitives found there and memory
// objects it points at the call's buffers; the primitives and the arithmetic
// are the shared cache's, so the bits are the same.
struct ThreadPlan {
  // One planned primitive with the memory objects its arguments are.
  struct Run {
    const CachedMatmul* mm = nullptr;
    dnnl::memory scratch;
    std::unordered_map<int, dnnl::memory> args;
  };
  MatmulDescs md;
  dnnl::memory a, b, c;
  Run plain, packed;  // packed: found on the first call that reads a registered weight

  void prepare(Run& r, const CachedMatmul& mm, bool reads_packed) {
    const dnnl::engine& eng = engine().eng;
    r.mm = &mm;
    r.scratch = dnnl::memory(mm.scratchpad, eng, DNNL_MEMORY_NONE);
    r.args = {{DNNL_ARG_SRC, a}, {DNNL_ARG_DST, c}, {DNNL_ARG_SCRATCHPAD, r.scratch}};
    if (!reads_packed) r.args.emplace(DNNL_ARG_WEIGHTS, b);
  }

  // B from b_packed (the packed copy of a registered weight) through `packed`, else b_data as stored.
  void run(Run& r, float* C, const void* a_data, const void* b_data, const dnnl::memory* b_packed) {
    r.scratch.set_data_handle(thread_scratchpad(r.mm->scratchpad.get_size()));
    a.set_data_handle(const_cast<void*>(a_data));
    c.set_data_handle(C);
    if (b_packed)
      r.args[DNNL_ARG_WEIGHTS] = *b_packed;
    else
      b.set_data_handle(const_cast<void*>(b_data));
    r.mm->prim.execute(thread_stream(), r.args);
    thread_stream().wait();
    // The packed copy belongs to the registered weights: holding its handle
    // here would keep it alive after they are unregistered.
    if (b_packed) r.args.erase(DNNL_ARG_WEIGHTS);
  }
};

// The calling thread's plan for (s, beta, p), made on first use (the shared
// cache plans the primitive for the thread budget the caller set).
ThreadPlan& thread_plan(const GemmShape& s, float beta, MatmulPrecision p) {
  thread_local std::map<Key, ThreadPlan> plans;
  // The shared cache's key without its packed flag: one plan holds both primitives.
  const Key key{s.M, s.N, s.K, int(s.ta), int(s.tb), s.lda, s.ldb, s.ldc, int(beta), int(p), omp_get_max_threads(), 0};
  auto [it, fresh] = plans.try_emplace(key);
  ThreadPlan& plan = it->second;
  if (fresh) {
    const dnnl::engine& eng = engine().eng;
    plan.md = matmul_descs(s, p);
    plan.a = dnnl::memory(plan.md.a, eng, DNNL_MEMORY_NONE);
    plan.b = dnnl::memory(plan.md.b, eng, DNNL_MEMORY_NONE);
    plan.c = dnnl::memory(plan.md.c, eng, DNNL_MEMORY_NONE);
    plan.prepare(plan.plain, cached_matmul(engine().serial_cache, plan.md, s, beta, p), false);
  }
  return plan;
}

// Through the primitive cached for this shape: planned for packed weights
// when b is a registered weight (its packed copy read), for b as stored otherwise.
// C's rows (s.M of s.N values, ldc apart) = addend's.
void copy_rows(float* C, const float* addend, const GemmShape& s) {
  for (int64_t i = 0; i < s.M; ++i) std::copy(addend + i * s.ldc, addend + i * s.ldc + s.N, C + i * s.ldc);
}

void run_planned(std::map<Key, CachedMatmul>& cache, const MatmulDescs& md, float* C, const void* a, const void* b,
                 const GemmShape& s, float beta, MatmulPrecision p, const float* addend = nullptr) {
  const bool adds = addend != nullptr;
  const int64_t off = weight_offset(b, s, p);
  const CachedMatmul* mm = off >= 0 ? &cached_matmul(cache, md, s, beta, p, /*packed=*/true, adds) : nullptr;
  if (mm && !mm->packing_pays) mm = nullptr;
  const CachedMatmul& run = mm ? *mm : cached_matmul(cache, md, s, beta, p, /*packed=*/false, adds);
  if (adds && !run.adds_like_sum) {  // this CPU adds in another kernel: the copy and beta 1
    copy_rows(C, addend, s);
    return run_planned(cache, md, C, a, b, s, 1.0f, p);
  }
  execute(run, md, C, a, b, mm ? &packed_weight(off, b, md.b, s, p, mm->weights) : nullptr, addend);
}

// C = op(a) op(b) (+ C) through the cached oneDNN primitive; a and b are
// prepared (their leading dimensions replace the shape's).
void run_matmul(float* C, Operand a, Operand b, GemmShape s, float beta, MatmulPrecision p,
                const float* addend = nullptr) {
  s.lda = a.ld;
  s.ldb = b.ld;
  const MatmulDescs md = matmul_descs(s, p);
  run_planned(engine().cache, md, C, a.data, b.data, s, beta, p, addend);
  if (g_inject_rel != 0.0f) [[unlikely]] perturb_output(C, s);
}

// The shape with its default leading dimensions filled in.
GemmShape with_leading_dims(GemmShape s) {
  if (s.lda == 0) s.lda = s.ta == Trans::kNo ? s.K : s.M;
  if (s.ldb == 0) s.ldb = s.tb == Trans::kNo ? s.N : s.K;
  if (s.ldc == 0) s.ldc = s.N;
  return s;
}

}  // namespace

void gemm(float* C, GemmInput A, GemmInput B, const GemmShape& s0, float beta, MatmulPrecision p) {
  MT_CHECK(beta == 0.0f || beta == 1.0f, "beta must be 0 or 1, got {}", beta);
  ScopedPhase phase(Phase::kGemm);
  GemmShape s = s0;
  if (s.M == 0 || s.N == 0) return;
  if (s.K == 0) {
    if (beta == 0.0f)
      for (int64_t i = 0; i < s.M; ++i)
        for (int64_t j = 0; j < s.N; ++j) C[i * (s.ldc ? s.ldc : s.N) + j] = 0.0f;
    return;
  }
  s = with_leading_dims(s);

  if (use_skinny(s, p)) {
    MT_CHECK(A.form == OperandForm::kFp32 && B.form == OperandForm::kFp32, "fp32 product of non-fp32 inputs");
    skinny_gemm(C, static_cast<const float*>(A.data), static_cast<const float*>(B.data), s, beta);
    if (g_inject_rel != 0.0f) [[unlikely]] perturb_output(C, s);
    return;
  }

  run_matmul(C, prepare(A, a_rows(s), a_cols(s), s.lda, p, scratch.a),
             prepare(B, b_rows(s), b_cols(s), s.ldb, p, scratch.b), s, beta, p);
}

void gemm_add(float* C, GemmInput A, GemmInput B, const GemmShape& s0, const float* addend, MatmulPrecision p) {
  const GemmShape s = with_leading_dims(s0);
  if (s.M == 0 || s.N == 0) return;
  if (s.K == 0 || use_skinny(s, p) || addend == C) {  // the same sum in two passes
    if (addend != C) copy_rows(C, addend, s);
    return gemm(C, A, B, s0, 1.0f, p);
  }
  ScopedPhase phase(Phase::kGemm);
  run_matmul(C, prepare(A, a_rows(s), a_cols(s), s.lda, p, scratch.a),
             prepare(B, b_rows(s), b_cols(s), s.ldb, p, scratch.b), s, 0.0f, p, addend);
}

void linear_forward(float* y, GemmInput x, const float* W, int64_t M, int64_t N, int64_t K, MatmulPrecision p) {
  gemm(y, x, W, GemmShape{M, N, K, Trans::kNo, Trans::kYes}, 0.0f, p);
}

void linear_backward_input(float* dx, const float* dy, const float* W, int64_t M, int64_t N,
                           int64_t K, float beta, MatmulPrecision p) {
  gemm(dx, dy, W, GemmShape{M, K, N, Trans::kNo, Trans::kNo}, beta, p);
}

void linear_backward_weight(WeightGrad dW, const float* dy, GemmInput x, int64_t M, int64_t N, int64_t K,
                            MatmulPrecision p) {
  gemm(dW.data, dy, x, GemmShape{N, K, M, Trans::kYes, Trans::kNo}, dW.beta, p);
}

void linear_backward(float* dx, WeightGrad dW, GemmInput dy, GemmInput x, const float* W, int64_t M, int64_t N,
                     int64_t K, float beta, MatmulPrecision p, int64_t ldy) {
  if (ldy == 0) ldy = N;
  if (p == MatmulPrecision::kFp32 || M == 0 || N == 0 || K == 0) {
    if (dx) gemm(dx, dy, W, GemmShape{M, K, N, Trans::kNo, Trans::kNo, ldy}, beta, p);
    gemm(dW.data, dy, x, GemmShape{N, K, M, Trans::kYes, Trans::kNo, ldy}, dW.beta, p);
    return;
  }
  MT_CHECK(beta == 0.0f || beta == 1.0f, "beta must be 0 or 1, got {}", beta);
  ScopedPhase phase(Phase::kGemm);
  // bf16 never takes the skinny path, so both products go to oneDNN with
  // the one prepared copy of dy (M x N, as stored in both).
  const Operand g = prepare(dy, M, N, ldy, p, scratch.dy);
  if (dx)
    run_matmul(dx, g, prepare(W, N, K, K, p, scratch.b), with_leading_dims({M, K, N, Trans::kNo, Trans::kNo}),
               beta, p);
  run_matmul(dW.data, g, prepare(x, M, K, K, p, scratch.b), with_leading_dims({N, K, M, Trans::kYes, Trans::kNo}),
             dW.beta, p);
}

bool gemm_native_bf16() { return engine().native_bf16; }

void gemm_on_thread(float* C, const void* A, const void* B, const GemmShape& s0, float beta, MatmulPrecision p) {
  MT_CHECK(beta == 0.0f || beta == 1.0f, "beta must be 0 or 1, got {}", beta);
  if (s0.M == 0 || s0.N == 0) return;
  MT_CHECK(s0.K > 0, "gemm_on_thread needs K > 0");
  const GemmShape s = with_leading_dims(s0);
  // One thread for planning and for running: oneDNN sizes both by
  // omp_get_max_threads(), which this changes for the calling task only.
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  ThreadPlan& plan = thread_plan(s, beta, p);
  const int64_t off = weight_offset(B, s, p);
  if (off >= 0 && !plan.packed.mm)
    plan.prepare(plan.packed, cached_matmul(engine().serial_cache, plan.md, s, beta, p, /*packed=*/true), true);
  if (off >= 0 && plan.packed.mm->packing_pays)
    plan.run(plan.packed, C, A, nullptr, &packed_weight(off, B, plan.md.b, s, p, plan.packed.mm->weights));
  else
    plan.run(plan.plain, C, A, B, nullptr);
  omp_set_num_threads(threads);
}

OperandForm operand_form(MatmulPrecision p) {
  if (p == MatmulPrecision::kFp32) return OperandForm::kFp32;
  return engine().native_bf16 ? OperandForm::kBf16 : OperandForm::kBf16InFp32;
}

const void* operand_of(const float* x, int64_t n, OperandForm f, OperandBuffer& buf) {
  if (f == OperandForm::kFp32) return x;
  if (f == OperandForm::kBf16)
    if (const bf16* sx = shadow_of(x, 1, n, n)) return sx;
  put_operand(buf, 0, x, n, f);
  return buf.storage.data();
}

void gemm_register_bf16_shadow(const float* base, const bf16* shadow, int64_t n) {
  g_shadow = shadow ? Shadow{base, shadow, n} : Shadow{};
}

void gemm_register_packed_weights(const float* base, int64_t n) {
  std::lock_guard<std::mutex> lock(g_packed.mu);
  g_packed.copies.clear();
  g_packed.max_span = 0;
  g_packed.bytes = 0;
  g_packed.base = base;
  g_packed.n = base ? n : 0;
  g_packed.version.fetch_add(1);
}

void gemm_unregister_packed_weights(const float* owner) {
  if (owner && owner == g_packed.base) gemm_register_packed_weights(nullptr, 0);
}

void gemm_weights_changed() { g_packed.version.fetch_add(1); }

void gemm_pack_final_weights(const float* p, int64_t n) {
  PackedWeights& pw = g_packed;
  std::vector<std::pair<PackedCopy*, int64_t>> overlaps;  // each copy the range meets, and by how many elements
  int64_t lo = 0;
  {
    std::lock_guard<std::mutex> lock(pw.mu);
    if (!pw.base || n <= 0 || p < pw.base || p + n > pw.base + pw.n) return;
    lo = p - pw.base;
    const int64_t hi = lo + n;
    // Keys start with the offset: copies from lo - max_span on may reach into the range.
    constexpr int kMinInt = std::numeric_limits<int>::min();
    constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
    for (auto it = pw.copies.lower_bound({lo - pw.max_span, kMinInt, kMinInt, kMin, kMin, kMin});
         it != pw.copies.end() && std::get<0>(it->first) < hi; ++it)
      for (const auto& c : it->second) {
        const int64_t a = std::max(lo, c->off), b = std::min(hi, c->off + c->span);
        if (b > a) overlaps.emplace_back(c.get(), b - a);
      }
  }
  // Reported in disjoint ranges, once per update: the report that completes
  // a copy's span fills it (on its thread, which holds at least its own part
  // in cache), current for the version the update's bump makes.
  const uint64_t now = pw.version.load();
  for (const auto& [c, elems] : overlaps) {
    std::lock_guard<std::mutex> lock(c->mu);
    if (c->final_at != now) {
      c->final_at = now;
      c->final_elems = 0;
    }
    c->final_elems += elems;
    if (c->final_elems != c->span) continue;
    if (c->from_shadow && (!g_shadow.data || g_shadow.base != pw.base)) continue;
    const void* src =
        c->from_shadow ? static_cast<const void*>(g_shadow.data + c->off) : static_cast<const void*>(pw.base + c->off);
    pack_weight(c->mem.get_data_handle(), c->layout, src, c->plain, engine().eng, thread_stream());
    c->version = now + 1;
  }
}

int64_t gemm_packed_bytes() {
  std::lock_guard<std::mutex> lock(g_packed.mu);
  return g_packed.bytes;
}

void gemm_inject_relative_error(double rel) { g_inject_rel = float(rel); }

int64_t gemm_cache_size() {
  std::lock_guard<std::mutex> lock(engine().mu);
  return int64_t(engine().cache.size() + engine().serial_cache.size());
}

}  // namespace mt
