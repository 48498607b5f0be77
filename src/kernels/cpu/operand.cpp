// operand.cpp — element addressing and the rounding writes of operand.h.
#include "kernels/cpu/operand.h"

#include <algorithm>
#include <cstring>

#include "core/bf16.h"
#include "core/check.h"

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

void put_operand(OperandBuffer& buf, int64_t i, const void* x, OperandForm held, int64_t at, int64_t n,
                 OperandForm f) {
  if (held != f) {
    MT_CHECK(held == OperandForm::kFp32, "an input held in one bf16 form cannot serve a product in another");
    return put_operand(buf, i, static_cast<const float*>(x) + at, n, f);
  }
  void* out = operand_element(buf.reserve(i + n, f), i, f);
  const size_t bytes = size_t(n) * (f == OperandForm::kBf16 ? sizeof(bf16) : sizeof(float));
  std::memcpy(out, operand_element(x, at, f), bytes);
}

const void* operand_at(const void* x, OperandForm held, int64_t i, int64_t n, OperandForm f, OperandBuffer& buf) {
  if (held == f) return operand_element(x, i, f);
  put_operand(buf, 0, x, held, i, n, f);
  return buf.storage.data();
}

}  // namespace mt
