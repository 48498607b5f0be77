// grouped_swiglu.cpp — the expert tasks of the two passes. Operands reach
// gemm_on_thread in the form precision p needs on this CPU (gemm.h): weights
// from the registered bf16 shadow or converted once per call per expert; z
// and dh13 written in that form by the SwiGLU that produces them; x and dy
// converted by the task that reads them (dy once for both of its products).
// Scratch is grow-only and owned here (docs/kernels.md).
#include "kernels/cpu/grouped_swiglu.h"

#include <algorithm>
#include <vector>

#include <omp.h>

#include "core/phase_timer.h"
#include "kernels/cpu/swiglu.h"

namespace mt {
namespace {

// Splits [0, n) into the fewest blocks of at most `most` rows, of equal
// size in multiples of 16 but the last, and visits them in order as
// fn(offset, rows): a 540-row segment becomes 192 + 192 + 156 rather than
// 256 + 256 + 28, whose last product would repack the weights for a sliver
// of work.
template <class Fn>
void for_each_block(int64_t n, int64_t most, Fn&& fn) {
  if (n == 0) return;
  const int64_t blocks = (n + most - 1) / most;
  const int64_t size = std::min(most, ((n + blocks - 1) / blocks + 15) / 16 * 16);
  for (int64_t r = 0; r < n; r += size) fn(r, std::min(size, n - r));
}

// Rows [r0, r0 + rows) of an expert's segment: all of it (a task that runs
// the expert's tiles and, in the backward, its weight gradients), or one
// tile. For a weight-gradient block: rows [r0, r0 + rows) of dW13
// (which == 0) or dW2 (which == 1).
struct Task {
  int64_t expert, which, r0, rows;
};

// Whole experts, largest first (stable, so a loop scheduled dynamically ends
// on its shortest tasks), where there are at least kExpertsPerThread of them
// per thread; else their row tiles, so that a process holding few experts
// (expert parallelism over many ranks) still keeps every thread busy. Only
// the assignment of products to threads depends on the thread count, never
// the products, so the bits do not.
constexpr int64_t kExpertsPerThread = 4;
bool tasks_per_expert(std::vector<Task>& tasks, const ExpertGroup& g) {
  tasks.clear();
  for (int64_t i = 0; i < g.count; ++i)
    if (g.begin[i + 1] > g.begin[i]) tasks.push_back(Task{i, 0, 0, g.begin[i + 1] - g.begin[i]});
  if (int64_t(tasks.size()) >= kExpertsPerThread * omp_get_max_threads()) {
    std::stable_sort(tasks.begin(), tasks.end(), [](const Task& a, const Task& b) { return a.rows > b.rows; });
    return true;
  }
  tasks.clear();
  for (int64_t i = 0; i < g.count; ++i)
    for_each_block(g.begin[i + 1] - g.begin[i], kGroupedRowTile, [&](int64_t r, int64_t rows) {
      tasks.push_back(Task{i, 0, r, rows});
    });
  return false;
}

struct Module {
  std::vector<Task> tasks;
  std::vector<OperandBuffer> w13buf, w2buf;
  std::vector<const void*> w13, w2;      // each expert's weights as operands
  OperandBuffer dy;                      // the layer's dy as an operand, for both of its products
};
thread_local Module g_module;  // per calling thread: RL generates in the background while the model trains

struct ThreadScratch {
  OperandBuffer x;
  std::vector<float> dz;
};
thread_local ThreadScratch tls;

// Every expert's weights in the form the products read: the fp32 tensors
// themselves, their bf16 shadow, or a copy converted once for this call.
void prepare_weights(const ExpertGroup& g, OperandForm f) {
  Module& m = g_module;
  m.w13.resize(g.count);
  m.w2.resize(g.count);
  if (int64_t(m.w13buf.size()) < g.count) {
    m.w13buf.resize(g.count);
    m.w2buf.resize(g.count);
  }
#pragma omp parallel for schedule(dynamic, 1) if (f != OperandForm::kFp32)
  for (int64_t i = 0; i < g.count; ++i) {
    m.w13[i] = operand_of(g.w13[i], 2 * g.F * g.Din, f, m.w13buf[i]);
    m.w2[i] = operand_of(g.w2[i], g.Din * g.F, f, m.w2buf[i]);
  }
}

// Rows [r0, r0 + n) of a (rows, cols) fp32 matrix as an operand: in place
// for fp32, else converted into the thread's `buf`.
const void* rows_operand(const float* X, int64_t r0, int64_t n, int64_t cols, OperandForm f, OperandBuffer& buf) {
  if (f == OperandForm::kFp32) return X + r0 * cols;
  put_operand(buf, 0, X + r0 * cols, n * cols, f);
  return buf.storage.data();
}

}  // namespace

void grouped_swiglu_forward(float* y, float* h13, void* z, const float* x, const ExpertGroup& g, MatmulPrecision p) {
  const int64_t F = g.F, Din = g.Din;
  ScopedPhase phase(Phase::kGemm);
  const OperandForm f = operand_form(p);
  Module& m = g_module;
  prepare_weights(g, f);
  tasks_per_expert(m.tasks, g);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t k = 0; k < int64_t(m.tasks.size()); ++k) {
    const Task t = m.tasks[size_t(k)];
    ThreadScratch& sc = tls;
    // A tile task is one block of its own rows: the tiles a whole expert has.
    for_each_block(t.rows, kGroupedRowTile, [&](int64_t r, int64_t rows) {
      const int64_t r0 = g.begin[t.expert] + t.r0 + r;
      float* h = h13 + r0 * 2 * F;
      void* zt = operand_element(z, r0 * F, f);
      gemm_on_thread(h, rows_operand(x, r0, rows, Din, f, sc.x), m.w13[t.expert],
                     GemmShape{rows, 2 * F, Din, Trans::kNo, Trans::kYes}, 0.0f, p);
      swiglu_forward_on_thread(zt, f, h, rows, F);
      gemm_on_thread(y + r0 * Din, zt, m.w2[t.expert], GemmShape{rows, Din, F, Trans::kNo, Trans::kYes}, 0.0f, p);
    });
  }
}

void grouped_swiglu_backward(float* dx, const WeightGrad* dw13, const WeightGrad* dw2, void* dh13, const float* dy,
                             const float* x, const float* h13, const void* z, const ExpertGroup& g, MatmulPrecision p) {
  ScopedPhase phase(Phase::kGemm);
  const int64_t F = g.F, Din = g.Din;
  const OperandForm f = operand_form(p);
  Module& m = g_module;
  prepare_weights(g, f);

  // Row tiles: dz = dy W2, dh13 = swiglu'(dz), dx = dh13 W13. dy is
  // converted, by the tile that reads it, into the layer's operand buffer,
  // which the weight gradients read again; dh13 is written as the operand
  // both read.
  void* dyo = f == OperandForm::kFp32 ? const_cast<float*>(dy) : m.dy.reserve(g.begin[g.count] * Din, f);
  auto tiles = [&](const Task& t, ThreadScratch& sc) {
    for_each_block(t.rows, kGroupedRowTile, [&](int64_t r, int64_t rows) {
      const int64_t r0 = g.begin[t.expert] + t.r0 + r;
      if (int64_t(sc.dz.size()) < rows * F) sc.dz.resize(rows * F);
      if (f != OperandForm::kFp32) write_operand(dyo, r0 * Din, dy + r0 * Din, rows * Din, f);
      void* dh = operand_element(dh13, r0 * 2 * F, f);
      gemm_on_thread(sc.dz.data(), operand_element(dyo, r0 * Din, f), m.w2[t.expert], GemmShape{rows, F, Din}, 0.0f, p);
      swiglu_backward_on_thread(dh, f, sc.dz.data(), h13 + r0 * 2 * F, rows, F);
      gemm_on_thread(dx + r0 * Din, dh, m.w13[t.expert], GemmShape{rows, Din, 2 * F}, 0.0f, p);
    });
  };
  // Weight gradients, by block of dW rows: dW13 (+)= dh13ᵀ x, dW2 (+)= dyᵀ z,
  // each over all of the expert's rows (a block takes its tensor's beta: the
  // blocks cover it once). In bf16 a block of dW13 converts the
  // expert's x rows it reads (once per expert where a tensor is one block,
  // as in every preset).
  auto weight_block = [&](const Task& t, ThreadScratch& sc) {
    const int64_t b = g.begin[t.expert], M = g.begin[t.expert + 1] - b;
    if (t.which == 0)
      gemm_on_thread(dw13[t.expert].data + t.r0 * Din, operand_element(dh13, b * 2 * F + t.r0, f),
                     rows_operand(x, b, M, Din, f, sc.x),
                     GemmShape{t.rows, Din, M, Trans::kYes, Trans::kNo, 2 * F, Din, Din}, dw13[t.expert].beta, p);
    else
      gemm_on_thread(dw2[t.expert].data + t.r0 * F, operand_element(dyo, b * Din + t.r0, f),
                     operand_element(z, b * F, f), GemmShape{t.rows, F, M, Trans::kYes, Trans::kNo, Din, F, F},
                     dw2[t.expert].beta, p);
  };
  auto weight_blocks = [&](int64_t e, auto&& fn) {
    for_each_block(2 * F, kGroupedWeightBlock, [&](int64_t r0, int64_t rows) { fn(Task{e, 0, r0, rows}); });
    for_each_block(Din, kGroupedWeightBlock, [&](int64_t r0, int64_t rows) { fn(Task{e, 1, r0, rows}); });
  };

  // Whole experts: an expert's weight gradients follow its tiles on the same
  // thread, while the dh13 and dy the tiles wrote are still in its cache.
  // Tiles: a pass of tiles, then one of weight-gradient blocks.
  const bool per_expert = tasks_per_expert(m.tasks, g);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t k = 0; k < int64_t(m.tasks.size()); ++k) {
    const Task t = m.tasks[size_t(k)];
    ThreadScratch& sc = tls;
    tiles(t, sc);
    if (per_expert) weight_blocks(t.expert, [&](const Task& w) { weight_block(w, sc); });
  }
  if (per_expert) return;
  m.tasks.clear();
  for (int64_t i = 0; i < g.count; ++i)
    if (g.begin[i + 1] > g.begin[i]) weight_blocks(i, [&](const Task& w) { m.tasks.push_back(w); });
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t k = 0; k < int64_t(m.tasks.size()); ++k) weight_block(m.tasks[size_t(k)], tls);
}

}  // namespace mt
