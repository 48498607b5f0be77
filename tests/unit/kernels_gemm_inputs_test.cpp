// GEMM inputs written by their producers in the form the product reads
// (kernels/cpu/operand.h): the producer's rounding is the one a GEMM applies
// to an fp32 input, so a bf16 product of a prepared input is bit for bit the
// product of the fp32 input; and the model stores its GEMM-only activations
// in that form (model/buffer_sizer.h: GemmActivation).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/bf16.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/operand.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/delta_gates.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/swiglu.h"
#include "model/transformer.h"
#include "support/random.h"

namespace mt {
namespace {

using testing::randn;

const OperandForm kForms[] = {OperandForm::kFp32, OperandForm::kBf16, OperandForm::kBf16InFp32};

// The fp32 value of element i of an operand of form f.
float element_value(const std::vector<float>& storage, int64_t i, OperandForm f) {
  const void* e = operand_element(storage.data(), i, f);
  return f == OperandForm::kBf16 ? bf16_to_f32(*static_cast<const bf16*>(e)) : *static_cast<const float*>(e);
}

// What a GEMM converting x would read: x itself, or x rounded to bf16.
float expected_value(float x, OperandForm f) { return f == OperandForm::kFp32 ? x : bf16_to_f32(f32_to_bf16(x)); }

TEST(Operand, WriteRoundsToNearestEvenAtAnyOffset) {
  const std::vector<float> x = randn(37, 3.0f, 1);
  for (OperandForm f : kForms) {
    std::vector<float> storage(size_t(operand_floats(40, f)), -1.0f);
    write_operand(storage.data(), 3, x.data(), 37, f);
    for (int64_t i = 0; i < 37; ++i) EXPECT_EQ(element_value(storage, 3 + i, f), expected_value(x[i], f)) << i;
  }
  EXPECT_EQ(operand_floats(7, OperandForm::kBf16), 4);
  EXPECT_EQ(operand_floats(7, OperandForm::kBf16InFp32), 7);
}

// Rows longer than the producers' 512-value chunks, and a ragged last chunk.
TEST(Operand, RmsnormAndSwigluWriteEveryFormAsTheirFp32OutputRounded) {
  const int64_t N = 5, C = 1100;
  const std::vector<float> x = randn(N * C, 1.0f, 2), w = randn(C, 1.0f, 3), h = randn(N * 2 * C, 2.0f, 4);
  const std::vector<float> dz = randn(N * C, 1.0f, 5);
  std::vector<float> y(N * C), rstd(N), z(N * C), dh(N * 2 * C);
  rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, 1e-6f);
  swiglu_forward(z.data(), h.data(), N, C);
  swiglu_backward(dh.data(), dz.data(), h.data(), N, C);
  for (OperandForm f : kForms) {
    std::vector<float> yf(size_t(operand_floats(N * C, f))), zf(yf.size()), zt(yf.size()), rstd_f(N),
        dht(size_t(operand_floats(N * 2 * C, f)));
    rmsnorm_forward(yf.data(), f, rstd_f.data(), x.data(), w.data(), N, C, 1e-6f);
    swiglu_forward(zf.data(), f, h.data(), N, C);
    // The grouped experts' forms, on the calling thread.
    swiglu_forward_on_thread(zt.data(), f, h.data(), N, C);
    swiglu_backward_on_thread(dht.data(), f, dz.data(), h.data(), N, C);
    std::vector<float> dhp(dht.size());
    swiglu_backward(dhp.data(), f, dz.data(), h.data(), N, C);
    EXPECT_EQ(0, std::memcmp(rstd.data(), rstd_f.data(), N * sizeof(float)));
    for (int64_t i = 0; i < N * C; ++i) {
      ASSERT_EQ(element_value(yf, i, f), expected_value(y[i], f)) << "rmsnorm " << i;
      ASSERT_EQ(element_value(zf, i, f), expected_value(z[i], f)) << "swiglu " << i;
      ASSERT_EQ(element_value(zt, i, f), expected_value(z[i], f)) << "swiglu on thread " << i;
    }
    for (int64_t i = 0; i < N * 2 * C; ++i) {
      ASSERT_EQ(element_value(dht, i, f), expected_value(dh[i], f)) << "swiglu backward on thread " << i;
      ASSERT_EQ(element_value(dhp, i, f), expected_value(dh[i], f)) << "swiglu backward " << i;
    }
  }
}

// The gated-delta layer's output gate (W_o's input), rows longer than its 256-value stack row,
// read from a wider z block.
TEST(Operand, SiluGateWritesEveryFormAsItsFp32OutputRounded) {
  const int64_t N = 3, C = 600, ldz = 700;
  const std::vector<float> x = randn(N * C, 1.0f, 6), z = randn(N * ldz, 2.0f, 7);
  std::vector<float> y(N * C);
  silu_gate_forward(y.data(), x.data(), z.data() + 50, ldz, N, C);
  for (OperandForm f : kForms) {
    std::vector<float> yf(size_t(operand_floats(N * C, f)));
    silu_gate_forward(yf.data(), f, x.data(), z.data() + 50, ldz, N, C);
    for (int64_t i = 0; i < N * C; ++i) ASSERT_EQ(element_value(yf, i, f), expected_value(y[i], f)) << i;
  }
}

// The gradients only products read, written in their form by the kernel
// that makes them: the merged dqkv of the attention's backward and the
// head's dlogits, each its fp32 output rounded.
TEST(Operand, GradientProducersWriteEveryFormAsTheirFp32OutputRounded) {
  const int64_t B = 2, T = 5, H = 4, Hkv = 2, Dh = 8, ld = (H + 2 * Hkv) * Dh;
  std::vector<float> cs(T * Dh / 2), sn(T * Dh / 2);
  rope_tables(cs.data(), sn.data(), T, Dh, 10000.0);
  const std::vector<float> dq = randn(B * H * T * Dh, 1.0f, 6), dk = randn(B * Hkv * T * Dh, 1.0f, 7),
                           dv = randn(B * Hkv * T * Dh, 1.0f, 8);
  std::vector<float> dqkv(B * T * ld);
  split_qkv_rope_backward(dqkv.data(), dq.data(), dk.data(), dv.data(), cs.data(), sn.data(), B, T, H, Hkv, Dh);

  const int64_t R = 3, V = 1100;
  const std::vector<float> logits = randn(R * V, 3.0f, 9);
  const std::vector<int32_t> targets = {5, -1, 1099};
  std::vector<float> dlogits = logits, losses(R);
  cross_entropy_forward_backward(losses.data(), dlogits.data(), targets.data(), R, V, 0.25f);
  for (OperandForm f : kForms) {
    std::vector<float> out(size_t(operand_floats(B * T * ld, f)));
    split_qkv_rope_backward(out.data(), f, dq.data(), dk.data(), dv.data(), cs.data(), sn.data(), B, T, H, Hkv, Dh);
    for (int64_t i = 0; i < B * T * ld; ++i) ASSERT_EQ(element_value(out, i, f), expected_value(dqkv[i], f)) << i;

    std::vector<float> work = logits, op(size_t(operand_floats(R * V, f))), losses_f(R);
    cross_entropy_forward_backward(losses_f.data(), work.data(), op.data(), f, targets.data(), R, V, 0.25f);
    EXPECT_EQ(0, std::memcmp(losses.data(), losses_f.data(), R * sizeof(float)));
    for (int64_t i = 0; i < R * V; ++i) ASSERT_EQ(element_value(op, i, f), expected_value(dlogits[i], f)) << i;
  }
}

// A prepared bf16 input gives the product of the fp32 input bit for bit, in
// the forward and in linear_backward's weight gradient, at an offset too.
TEST(GemmInputs, PreparedInputIsTheProductOfItsFp32Values) {
  const MatmulPrecision p = MatmulPrecision::kBf16;
  const OperandForm f = operand_form(p);
  const int64_t M = 96, N = 80, K = 72, skip = 16;
  const std::vector<float> x = randn((M + skip) * K, 1.0f, 5), W = randn(N * K, 1.0f, 6), dy = randn(M * N, 1.0f, 7);
  std::vector<float> xp(size_t(operand_floats((M + skip) * K, f)));
  write_operand(xp.data(), 0, x.data(), (M + skip) * K, f);
  const GemmInput prepared = GemmInput(xp.data(), f).at(skip * K);

  std::vector<float> y1(M * N), y2(M * N);
  linear_forward(y1.data(), x.data() + skip * K, W.data(), M, N, K, p);
  linear_forward(y2.data(), prepared, W.data(), M, N, K, p);
  EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)));

  std::vector<float> dx1(M * K), dx2(M * K), dW1(N * K, 0.5f), dW2(N * K, 0.5f);
  linear_backward(dx1.data(), dW1.data(), dy.data(), x.data() + skip * K, W.data(), M, N, K, 0.0f, p);
  linear_backward(dx2.data(), dW2.data(), dy.data(), prepared, W.data(), M, N, K, 0.0f, p);
  EXPECT_EQ(0, std::memcmp(dx1.data(), dx2.data(), dx1.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(dW1.data(), dW2.data(), dW1.size() * sizeof(float)));
}

// linear_backward with dy inside wider rows (ldy, MLA's fused projection) equals it on a dense copy of dy.
TEST(GemmInputs, LinearBackwardReadsDyWithItsRowLength) {
  const int64_t M = 96, N = 40, K = 72, ld = 64, col0 = 16;
  const std::vector<float> x = randn(M * K, 1.0f, 8), W = randn(N * K, 1.0f, 9), wide = randn(M * ld, 1.0f, 10);
  std::vector<float> dy(M * N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) dy[i * N + j] = wide[i * ld + col0 + j];
  for (MatmulPrecision p : {MatmulPrecision::kFp32, MatmulPrecision::kBf16}) {
    std::vector<float> dx1(M * K), dx2(M * K), dW1(N * K, 0.5f), dW2(N * K, 0.5f);
    linear_backward(dx1.data(), dW1.data(), dy.data(), x.data(), W.data(), M, N, K, 0.0f, p);
    linear_backward(dx2.data(), dW2.data(), wide.data() + col0, x.data(), W.data(), M, N, K, 0.0f, p, ld);
    for (size_t i = 0; i < dx1.size(); ++i) ASSERT_NEAR(dx1[i], dx2[i], 1e-4f * (1.0f + std::fabs(dx1[i]))) << i;
    for (size_t i = 0; i < dW1.size(); ++i) ASSERT_NEAR(dW1[i], dW2[i], 1e-4f * (1.0f + std::fabs(dW1[i]))) << i;
  }
}

TEST(GemmInputsDeathTest, AnInputHeldForAnotherPrecisionIsRefused) {
  const OperandForm f = operand_form(MatmulPrecision::kBf16);
  std::vector<float> x(64 * 64, 1.0f), W(64 * 64, 1.0f), y(64 * 64);
  EXPECT_DEATH(linear_forward(y.data(), GemmInput(x.data(), f), W.data(), 64, 64, 64, MatmulPrecision::kFp32),
               "another precision");
}

// Two small layers of `pattern`, dense FFNs.
ModelConfig two_layers(const char* pattern) {
  ModelConfig c;
  c.vocab_size = 64;
  c.d_model = 32;
  c.n_layers = 2;
  c.layer_pattern = pattern;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.d_ff = 48;
  return c;
}

// A bf16 step's activations hold `gemm_only` elements in the GEMM form (two bytes where this CPU
// has a native bf16 matmul, four where bf16 values are held in fp32) and one more buffer: the head
// chunk's dlogits (N, V) in the products' form. A live model allocates what the count says.
void expect_gemm_form_bytes(const ModelConfig& c, int64_t B, int64_t T, int64_t gemm_only) {
  const int64_t fp32 = Transformer::activation_bytes(c, B, T, MatmulPrecision::kFp32);
  const int64_t bf16 = Transformer::activation_bytes(c, B, T, MatmulPrecision::kBf16);
  const int64_t dlogits = B * T * c.vocab_size;
  if (gemm_native_bf16())
    EXPECT_EQ(fp32 - bf16, gemm_only * 2 - dlogits * 2);
  else
    EXPECT_EQ(bf16 - fp32, dlogits * 4);
  Transformer live(c, B, T, MatmulPrecision::kBf16);
  EXPECT_EQ(live.activation_bytes(), bf16);
}

// The model sizes its GEMM-input activations (normed attention input,
// attention output, SwiGLU products before W2, final-norm outputs) in the bf16 form.
TEST(GemmInputs, Bf16StepStoresGemmOnlyActivationsInTheGemmForm) {
  ModelConfig c = two_layers("G");
  const int64_t B = 2, T = 16, N = B * T;
  // Per layer: the attention's normed input (N, D), q, k, v (N, (H + 2 Hkv) Dh), its output (N, H Dh) and
  // the dense z (N, F); then the final norm's output (N, D).
  const int64_t qkv = N * (c.n_heads + 2 * c.n_kv_heads) * c.head_dim();
  const int64_t gemm_only =
      c.n_layers * (N * c.d_model + qkv + N * c.n_heads * c.head_dim() + N * c.d_ff) + N * c.d_model;
  expect_gemm_form_bytes(c, B, T, gemm_only);
  // With qk-norm q, k, v are rotated in place after the norm, in fp32.
  c.qk_norm = true;
  expect_gemm_form_bytes(c, B, T, gemm_only - c.n_layers * qkv);
}

// A gated-delta layer's GEMM-only activations are its normed input (N, D) and its gated output
// (N, Hd Dv), W_o's input; the rest of the layer (projection, heads, states) stays fp32.
TEST(GemmInputs, GatedDeltaLayersStoreTheirProjectionInputsInTheGemmForm) {
  const ModelConfig c = two_layers("DG");
  const int64_t B = 2, T = 16, N = B * T;
  const int64_t qkv = N * (c.n_heads + 2 * c.n_kv_heads) * c.head_dim();
  const int64_t delta_layer = N * c.d_model + N * c.delta_h() * c.delta_dv() + N * c.d_ff;
  const int64_t global_layer = N * c.d_model + qkv + N * c.n_heads * c.head_dim() + N * c.d_ff;
  expect_gemm_form_bytes(c, B, T, delta_layer + global_layer + N * c.d_model);
}

}  // namespace
}  // namespace mt
