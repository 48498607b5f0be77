// grad_ledger.h — which parameter gradients the current step's backward has
// written yet, so that a weight-gradient product that is the first to write
// its tensor can assign (dW = dyᵀ x, beta 0) instead of adding into the
// zeros the gradient holds (dW += dyᵀ x, beta 1), which would read them back
// from memory. It is PyTorch's zero_grad(set_to_none=True), where the first
// backward assigns .grad, kept as a hint: the gradients still hold zeros
// when the ledger says nothing wrote them (the optimizer's pass zeroes them
// as it reads them, FSDP clears a gathered unit's buffer), so beta 1 is
// always right and beta 0 only skips reading known zeros.
//
// A gradient's first writer is told so only if nothing touched the tensor
// before it: every other access (ParamSpan::grad, parallel_hooks.h) marks the
// tensor written, so an addition never lands between a zero state and a
// product that overwrites it. Granularity is the layout's tensors; a claim
// spanning several (a fused projection) is first only if all of them are.
// Used by the thread that runs the model's passes, never inside a parallel
// region. Measured: moe-512 bf16, the experts' weight gradients 25% faster
// (docs/performance.md, "Zen 5: first writes").
#pragma once
#include <cstdint>
#include <vector>

namespace mt {

class ParamLayout;

class GradLedger {
 public:
  explicit GradLedger(const ParamLayout& layout);

  // Every gradient holds zeros and nothing wrote it: the start of a step.
  void clear_all() { set(0, total_, 0); }
  // The tensors starting in global [lo, hi) hold zeros again (a unit buffer cleared).
  void clear(int64_t lo, int64_t hi) { set(lo, hi, 0); }
  // The tensors starting in [lo, hi) hold values (a unit buffer loaded with a running sum).
  void mark_written(int64_t lo, int64_t hi) { set(lo, hi, 1); }
  // Something may add into the tensor holding element `off`.
  void touch(int64_t off);
  // 0 when no tensor overlapping [off, off + n) was written since it was
  // cleared, else 1; marks them written. The caller's product writes that
  // range right after, with this beta.
  float first_write_beta(int64_t off, int64_t n);

  int64_t tensors() const { return int64_t(starts_.size()); }
  int64_t written() const;  // tensors written since they were last cleared (tests)

 private:
  int64_t tensor_of(int64_t off) const;  // index of the tensor holding `off`
  void set(int64_t lo, int64_t hi, uint8_t written);  // the tensors starting in [lo, hi)
  std::vector<int64_t> starts_;          // tensor offsets, increasing
  std::vector<uint8_t> written_;
  int64_t total_ = 0;
};

}  // namespace mt
