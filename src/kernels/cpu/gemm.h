// gemm.h — the one matrix-multiply entry point, backed by oneDNN's matmul
// primitive (chosen by measurement, docs/performance.md). Row-major:
//   C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C
// op(A) = A (A is M x K, leading dim lda) or A^T (A is K x M);
// op(B) = B (B is K x N, ldb) or B^T (B is N x K) — the nn.Linear case.
// Precision kBf16 rounds A and B to bf16 and accumulates in fp32.
// Primitives are cached per shape; bf16 operand copies live in a grow-only
// per-thread scratch owned by this module (the only "allocation" a kernel
// call may trigger, and only the first time a size is seen).
#pragma once
#include <cstdint>

#include "kernels/cpu/operand.h"

namespace mt {

enum class Trans { kNo, kYes };
enum class MatmulPrecision { kFp32, kBf16 };

struct GemmShape {
  int64_t M, N, K;
  Trans ta = Trans::kNo, tb = Trans::kNo;
  int64_t lda = 0, ldb = 0, ldc = 0;  // 0 = dense (derived from shape)
};

// A GEMM input: fp32 values, which a bf16 product converts on every call
// (or reads from the registered shadow, below), or values already in the
// form the product reads (operand_form(p)), which it reads as they are. The
// second is how an activation whose producer wrote that form (operand.h)
// reaches its GEMMs; giving it to a product of another precision is an error.
struct GemmInput {
  const void* data = nullptr;
  OperandForm form = OperandForm::kFp32;
  GemmInput(const float* x) : data(x) {}  // NOLINT(google-explicit-constructor): fp32 is the common case
  GemmInput(const void* x, OperandForm f) : data(x), form(f) {}
  // The input starting i elements further on.
  GemmInput at(int64_t i) const { return {operand_element(data, i, form), form}; }
};

// A weight gradient that a backward product adds into (beta 1: dW += ...),
// or writes (beta 0: dW = ...) where the caller knows dW holds zeros nothing
// else wrote this step (model/grad_ledger.h), so that the product need not
// read them back from memory. The bits are the same either way.
struct WeightGrad {
  float* data = nullptr;
  float beta = 1.0f;
  WeightGrad(float* d) : data(d) {}  // NOLINT(google-explicit-constructor): adding is the common case
  WeightGrad(float* d, float b) : data(d), beta(b) {}
};

// beta must be 0 (overwrite) or 1 (accumulate).
void gemm(float* C, GemmInput A, GemmInput B, const GemmShape& s, float beta, MatmulPrecision p);

// C = op(A) op(B) + addend, addend shaped as C (rows of ldc): a residual
// added by the product's own epilogue (oneDNN's binary post-op) instead of
// copied into C first for a beta-1 product (16 MB less memory traffic per
// moe-512 projection). The bits of that copy and beta 1 (GemmAdd.*): where
// this CPU's oneDNN would add in another kernel than the beta-1 one, it
// takes the copy and beta 1.
void gemm_add(float* C, GemmInput A, GemmInput B, const GemmShape& s, const float* addend, MatmulPrecision p);

// Convenience forms for y = x W^T (nn.Linear) and its two backward products.
// x: M x K, W: N x K, y: M x N.
void linear_forward(float* y, GemmInput x, const float* W, int64_t M, int64_t N, int64_t K, MatmulPrecision p);
// dx[M,K] (+)= dy[M,N] W[N,K]   (beta 0 or 1)
void linear_backward_input(float* dx, const float* dy, const float* W, int64_t M, int64_t N,
                           int64_t K, float beta, MatmulPrecision p);
// dW[N,K] (+)= dy^T[N,M] x[M,K]
void linear_backward_weight(WeightGrad dW, const float* dy, GemmInput x, int64_t M, int64_t N, int64_t K,
                            MatmulPrecision p);

// Both: dx (+)= dy W (skipped when dx is null) and dW (+)= dy^T x. In bf16,
// an fp32 dy is rounded once for the two products instead of once per
// product; a dy its producer wrote in the products' form is read as it is.
// ldy: dy's row length (0 = N), for dy inside a wider gradient buffer.
void linear_backward(float* dx, WeightGrad dW, GemmInput dy, GemmInput x, const float* W, int64_t M, int64_t N,
                     int64_t K, float beta, MatmulPrecision p, int64_t ldy = 0);

// bf16 shadow of an fp32 buffer (e.g. the parameters, refreshed after each
// optimizer step): a kBf16 gemm whose operand lies inside [base, base + n)
// reads the shadow at the same offset instead of converting the operand on
// every call. The caller keeps the shadow in sync with the fp32 values; an
// unregistered or partly covered operand is converted as usual. Pass
// shadow == nullptr to unregister.
struct bf16;
void gemm_register_bf16_shadow(const float* base, const bf16* shadow, int64_t n);

// Weights packed once per version: a product whose B operand lies wholly
// inside the registered weights [base, base + n) (fp32 products), or inside
// their registered bf16 shadow (native bf16 products), reads a copy of that
// operand reordered once into the blocked layout its primitive reads, made
// by the first product that needs it after gemm_weights_changed() and reused
// by every later one; other operands are read as they are. The results are
// the same bits (the same kernel runs; tests/unit/kernels_gemm_packed_test.cpp).
// The caller bumps the version whenever the weights (or the shadow) change
// and before anything reads them again: the trainer after each update and
// whenever it sets them (initialisation, restore, rollback). Registering
// replaces the previous region and frees its copies; unregistering (base == nullptr) does so only for the region at
// `owner` (so a second trainer's exit leaves the first's in place).
void gemm_register_packed_weights(const float* base, int64_t n);
void gemm_unregister_packed_weights(const float* owner);
void gemm_weights_changed();
// Reports the registered weights [p, p + n) (and their shadow) final for
// this update. A packed copy whose every element has been reported since the
// last gemm_weights_changed() is filled then, on the reporting thread, and
// marked current for the version the next gemm_weights_changed() makes: the
// optimizer reports each tensor as it finishes it, while it is in cache, and
// the products after the update's bump find those copies made. Ranges must
// be disjoint within an update; outside the registered region nothing
// happens; a copy not wholly reported is left to the products.
void gemm_pack_final_weights(const float* p, int64_t n);
// Bytes held by packed copies now (bench reports the peak's share of them).
int64_t gemm_packed_bytes();

// For kernels that multiply inside their own parallel tasks (the tiled
// attention): one product on operands already in the form the matmul reads
// for precision p. For kBf16 that is bf16 where this CPU has a native bf16
// matmul (gemm_native_bf16()), else bf16-rounded values held in fp32. Runs
// on the calling thread only, through a primitive planned for one thread, so
// the result does not depend on the caller's thread count. No phase
// accounting: the caller's phase covers it. beta 0 or 1.
bool gemm_native_bf16();
void gemm_on_thread(float* C, const void* A, const void* B, const GemmShape& s, float beta, MatmulPrecision p);

// How this CPU holds an operand of a product at precision p (operand.h).
OperandForm operand_form(MatmulPrecision p);
// n contiguous fp32 values as an operand: themselves (kFp32), the registered
// bf16 shadow that covers them (kBf16), or a converted copy in `buf`.
const void* operand_of(const float* x, int64_t n, OperandForm f, OperandBuffer& buf);

// Number of cached primitives (tests and diagnostics).
int64_t gemm_cache_size();

}  // namespace mt
