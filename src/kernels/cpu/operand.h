// operand.h — the forms a GEMM operand is held in, and writing values into
// them. A matmul at bf16 precision reads bf16 where the CPU has a native bf16
// matmul, else bf16-rounded values held in fp32 (gemm.h, operand_form). A
// producer whose only consumers are such GEMMs (an RMSNorm before a
// projection, a SwiGLU before the down projection) writes this form directly,
// so no GEMM converts that activation, in the forward or the backward.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace mt {

enum class OperandForm { kFp32, kBf16, kBf16InFp32 };

// Floats of storage that n elements of form f occupy (two bf16 per float).
int64_t operand_floats(int64_t n, OperandForm f);

// Element i of an operand of form f starting at base.
const void* operand_element(const void* base, int64_t i, OperandForm f);
void* operand_element(void* base, int64_t i, OperandForm f);

// Writes the fp32 values in[0, n) as elements [i, i + n) of the operand at
// base, rounding to bf16 by round-to-nearest-even (the rounding every GEMM
// conversion uses). Serial: for use inside a caller's parallel loop. `in`
// may be the destination itself when f is kFp32 or kBf16InFp32.
void write_operand(void* base, int64_t i, const float* in, int64_t n, OperandForm f);

// Elements [i, i + n) of the operand at base, from a producer of fp32 values:
// fill(out, from, len) writes values from..from + len into out. fp32 forms
// are filled in place (and rounded there, kBf16InFp32); bf16 a stack chunk
// at a time, then rounded into place. Element-wise producers give the same
// values in every form. Serial, as write_operand.
template <typename Fill>
inline void write_operand_row(void* base, int64_t i, int64_t n, OperandForm f, Fill fill) {
  if (f != OperandForm::kBf16) {
    float* out = static_cast<float*>(base) + i;
    fill(out, int64_t(0), n);
    if (f == OperandForm::kBf16InFp32) write_operand(out, 0, out, n, f);
    return;
  }
  constexpr int64_t kChunk = 512;
  alignas(64) float tmp[kChunk];
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    const int64_t len = std::min(kChunk, n - c0);
    fill(tmp, c0, len);
    write_operand(base, i + c0, tmp, len, f);
  }
}

// A grow-only buffer of operand elements (per-thread scratch of kernels that
// multiply inside their own tasks).
struct OperandBuffer {
  std::vector<float> storage;
  // Room for n elements of form f; keeps what is already there.
  void* reserve(int64_t n, OperandForm f);
};
// Writes in[0, n) as elements [i, i + n) of `buf` (grown as needed).
void put_operand(OperandBuffer& buf, int64_t i, const float* in, int64_t n, OperandForm f);
// Writes elements [at, at + n) of an input held in form `held` (fp32, or
// already f: copied as it is) as elements [i, i + n) of `buf`.
void put_operand(OperandBuffer& buf, int64_t i, const void* x, OperandForm held, int64_t at, int64_t n,
                 OperandForm f);

// Elements [i, i + n) of an input held in form `held`, as an operand of form
// f: in place when held is f, else (held is fp32) converted into `buf`.
const void* operand_at(const void* x, OperandForm held, int64_t i, int64_t n, OperandForm f, OperandBuffer& buf);

}  // namespace mt
