// buffer_sizer.h — one sizing pass shared by allocation and planning: every
// allocate() hands its buffers to a BufferSizer, which either resizes them
// (the trainer) or only adds up their bytes (the planner, `moetrain plan`),
// so the planner's activation figure is the trainer's allocation by construction.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu/gemm.h"

namespace mt {

// An activation whose readers are GEMMs (a projection's normed input, the
// SwiGLU product before the down projection), or kernels that read the same
// form (the attention output, read back by the attention backward), stored
// in the form those GEMMs read at the step's precision: bf16 in a bf16 step
// on a CPU with a native bf16 matmul. Its producer writes that form once;
// neither the forward GEMM nor the weight-gradient GEMM converts it again.
struct GemmActivation {
  std::vector<float> storage;  // elements of `form`: two per float for kBf16
  OperandForm form = OperandForm::kFp32;
  void* out() { return storage.data(); }
  GemmInput in() const { return {storage.data(), form}; }
};

class BufferSizer {
 public:
  enum class Mode { kAllocate, kCountOnly };
  // gemm_inputs: the form GemmActivations take (operand_form of the step's precision).
  explicit BufferSizer(Mode mode, OperandForm gemm_inputs = OperandForm::kFp32)
      : mode_(mode), gemm_inputs_(gemm_inputs) {}

  // Sizes `v` to n elements (kAllocate) and counts n * sizeof(T) bytes.
  template <typename T>
  void operator()(std::vector<T>& v, int64_t n) {
    if (mode_ == Mode::kAllocate) v.resize(size_t(n));
    bytes_ += n * int64_t(sizeof(T));
    sizes_.push_back(n * int64_t(sizeof(T)));
  }
  // Sizes `a` to n elements of the GEMM input form.
  void operator()(GemmActivation& a, int64_t n) { (*this)(a, n, gemm_inputs_); }
  // ... or of form f (fp32: a tensor whose producer keeps it in fp32).
  void operator()(GemmActivation& a, int64_t n, OperandForm f) {
    a.form = f;
    (*this)(a.storage, operand_floats(n, a.form));
  }
  OperandForm gemm_inputs() const { return gemm_inputs_; }
  int64_t bytes() const { return bytes_; }
  // Bytes of every buffer in the order sized: two layers whose lists are
  // equal can share their activation buffers (layer recomputation).
  const std::vector<int64_t>& sizes() const { return sizes_; }

 private:
  Mode mode_;
  OperandForm gemm_inputs_;
  int64_t bytes_ = 0;
  std::vector<int64_t> sizes_;
};

// Bytes of data held by vectors (what a sizing pass must have counted).
template <typename T>
int64_t vector_bytes(const std::vector<T>& v) {
  return int64_t(v.size() * sizeof(T));
}
inline int64_t vector_bytes(const GemmActivation& a) { return vector_bytes(a.storage); }
inline int64_t vector_bytes(const std::vector<GemmActivation>& v) {
  int64_t s = 0;
  for (const GemmActivation& a : v) s += vector_bytes(a);
  return s;
}
template <typename T>
int64_t vector_bytes(const std::vector<std::vector<T>>& vv) {
  int64_t s = 0;
  for (const auto& v : vv) s += vector_bytes(v);
  return s;
}

}  // namespace mt
