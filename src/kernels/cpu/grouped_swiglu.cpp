// grouped_swiglu.cpp — the task lists and the two passes. Operands reach
// gemm_on_thread in the form precision p needs on this CPU (gemm.h): weights
// from the registered bf16 shadow or converted once per call per expert; z
// and dh13 written in that form by the SwiGLU that produces them; x and dy
// converted by the task that reads them (dy once for both passes). Scratch
// is grow-only and owned here (docs/kernels.md).
#include "kernels/cpu/grouped_swiglu.h"

#include <algorithm>
#include <vector>

#include "core/phase_timer.h"
#include "kernels/cpu/swiglu.h"

namespace mt {
namespace {

// Rows [r0, r0 + rows) of expert i; or, for the weight gradients, rows
// [r0, r0 + rows) of dW13 (which == 0) or dW2 (which == 1).
struct Task {
  int64_t expert, which, r0, rows;
};

// Splits [begin, begin + n) into the fewest blocks of at most `most` rows,
// of equal size in multiples of 16 but the last: a 540-row segment becomes
// 192 + 192 + 156 rather than 256 + 256 + 28, whose last product would
// repack the weights for a sliver of work.
void append_blocks(std::vector<Task>& tasks, int64_t expert, int64_t which, int64_t begin, int64_t n,
                   int64_t most) {
  if (n == 0) return;
  const int64_t blocks = (n + most - 1) / most;
  const int64_t size = std::min(most, ((n + blocks - 1) / blocks + 15) / 16 * 16);
  for (int64_t r = 0; r < n; r += size) tasks.push_back(Task{expert, which, begin + r, std::min(size, n - r)});
}

struct Module {
  std::vector<Task> tasks;
  std::vector<OperandBuffer> w13buf, w2buf;
  std::vector<const void*> w13, w2;      // each expert's weights as operands
  OperandBuffer dy;                      // the layer's dy as an operand, from pass 1 for pass 2
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
  m.tasks.clear();
  for (int64_t i = 0; i < g.count; ++i) append_blocks(m.tasks, i, 0, g.begin[i], g.begin[i + 1] - g.begin[i], kGroupedRowTile);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t k = 0; k < int64_t(m.tasks.size()); ++k) {
    const Task t = m.tasks[k];
    ThreadScratch& sc = tls;
    float* h = h13 + t.r0 * 2 * F;
    void* zt = operand_element(z, t.r0 * F, f);
    gemm_on_thread(h, rows_operand(x, t.r0, t.rows, Din, f, sc.x), m.w13[t.expert],
                   GemmShape{t.rows, 2 * F, Din, Trans::kNo, Trans::kYes}, 0.0f, p);
    swiglu_forward_on_thread(zt, f, h, t.rows, F);
    gemm_on_thread(y + t.r0 * Din, zt, m.w2[t.expert], GemmShape{t.rows, Din, F, Trans::kNo, Trans::kYes}, 0.0f, p);
  }
}

void grouped_swiglu_backward(float* dx, float* const* dw13, float* const* dw2, void* dh13, const float* dy,
                             const float* x, const float* h13, const void* z, const ExpertGroup& g, MatmulPrecision p) {
  ScopedPhase phase(Phase::kGemm);
  const int64_t F = g.F, Din = g.Din;
  const OperandForm f = operand_form(p);
  Module& m = g_module;
  prepare_weights(g, f);

  // Pass 1, by row tile: dz = dy W2, dh13 = swiglu'(dz), dx = dh13 W13. dy
  // is converted into the layer's operand buffer, which pass 2 reads again;
  // dh13 is written as the operand both passes read.
  m.tasks.clear();
  for (int64_t i = 0; i < g.count; ++i)
    append_blocks(m.tasks, i, 0, g.begin[i], g.begin[i + 1] - g.begin[i], kGroupedRowTile);
  void* dyo = f == OperandForm::kFp32 ? const_cast<float*>(dy) : m.dy.reserve(g.begin[g.count] * Din, f);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t k = 0; k < int64_t(m.tasks.size()); ++k) {
    const Task t = m.tasks[k];
    ThreadScratch& sc = tls;
    if (int64_t(sc.dz.size()) < t.rows * F) sc.dz.resize(t.rows * F);
    if (f != OperandForm::kFp32) write_operand(dyo, t.r0 * Din, dy + t.r0 * Din, t.rows * Din, f);
    void* dh = operand_element(dh13, t.r0 * 2 * F, f);
    gemm_on_thread(sc.dz.data(), operand_element(dyo, t.r0 * Din, f), m.w2[t.expert], GemmShape{t.rows, F, Din}, 0.0f,
                   p);
    swiglu_backward_on_thread(dh, f, sc.dz.data(), h13 + t.r0 * 2 * F, t.rows, F);
    gemm_on_thread(dx + t.r0 * Din, dh, m.w13[t.expert], GemmShape{t.rows, Din, 2 * F}, 0.0f, p);
  }

  // Pass 2, by block of dW rows: dW13 += dh13ᵀ x, dW2 += dyᵀ z, each over
  // all of the expert's rows. dh13, dy and z are operands already; in bf16
  // a task converts the expert's x rows it reads (once per expert when a
  // tensor is one block, as in every preset).
  m.tasks.clear();
  for (int64_t i = 0; i < g.count; ++i) {
    if (g.begin[i + 1] == g.begin[i]) continue;
    append_blocks(m.tasks, i, 0, 0, 2 * F, kGroupedWeightBlock);
    append_blocks(m.tasks, i, 1, 0, Din, kGroupedWeightBlock);
  }
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t k = 0; k < int64_t(m.tasks.size()); ++k) {
    const Task t = m.tasks[k];
    ThreadScratch& sc = tls;
    const int64_t b = g.begin[t.expert], M = g.begin[t.expert + 1] - b;
    if (t.which == 0)
      gemm_on_thread(dw13[t.expert] + t.r0 * Din, operand_element(dh13, b * 2 * F + t.r0, f),
                     rows_operand(x, b, M, Din, f, sc.x),
                     GemmShape{t.rows, Din, M, Trans::kYes, Trans::kNo, 2 * F, Din, Din}, 1.0f, p);
    else
      gemm_on_thread(dw2[t.expert] + t.r0 * F, operand_element(dyo, b * Din + t.r0, f), operand_element(z, b * F, f),
                     GemmShape{t.rows, F, M, Trans::kYes, Trans::kNo, Din, F, F}, 1.0f, p);
  }
}

}  // namespace mt
