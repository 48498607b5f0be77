// operand.cpp — element addressing and the rounding writes of operand.h.
#include "kernels/cpu/operand.h"

#include <algorithm>

#include "core/bf16.h"

namespace mt {

int64_t operand_floats(int64_t n, OperandForm f) { return f == OperandForm::kBf16 ? (n + 1) / 2 : n; }

const void* operand_element(const void* base, int64_t i, OperandForm f) {
  return f == OperandForm::kBf16 ? static_cast<const void*>(static_cast<const bf16*>(base) + i)
                                 : static_cast<const void*>(static_cast<const float*>(base) + i);
}

void* operand_element(void* base, int64_t i, OperandForm f) {
  return const_cast<void*>(operand_element(static_cast<const void*>(base), i, f));
}

void write_operand(void* base, int64_t i, const float* in, int64_t n, OperandForm f) {
  void* out = operand_element(base, i, f);
  switch (f) {
    case OperandForm::kFp32:
      if (out != in) std::copy(in, in + n, static_cast<float*>(out));
      break;
    case OperandForm::kBf16: convert_f32_to_bf16_span(static_cast<bf16*>(out), in, n); break;
    case OperandForm::kBf16InFp32: round_f32_to_bf16_span(static_cast<float*>(out), in, n); break;
  }
}

void* OperandBuffer::reserve(int64_t n, OperandForm f) {
  const int64_t floats = operand_floats(n, f);
  if (int64_t(storage.size()) < floats) storage.resize(size_t(floats));
  return storage.data();
}

void put_operand(OperandBuffer& buf, int64_t i, const float* in, int64_t n, OperandForm f) {
  write_operand(buf.reserve(i + n, f), i, in, n, f);
}

}  // namespace mt
