// plan_delta_test.cpp — gated-delta ("D") layers in the planner: parameters, training and inference
// FLOPs, recurrent state instead of a KV cache, and activation terms of a tiny hybrid model worked
// out by hand from model/delta_block.h and kernels/cpu/gated_delta.h; the inference cache holds
// exactly the planner's KV bytes plus its state bytes.
#include <gtest/gtest.h>

#include "model/flops.h"
#include "model/kv_cache.h"
#include "model/weights.h"
#include "plan/activations.h"
#include "plan/model_stats.h"

namespace mt::plan {
namespace {

// V 320, D 64, 4 layers "DDDG", dense SwiGLU 128, tied. Attention: 4 heads of 16, 2 kv heads.
// D layers: Hd 2, Dk 16, Dv 32, chunk 16.
ModelConfig tiny_hybrid() {
  ModelConfig m;
  m.vocab_size = 320, m.d_model = 64, m.n_layers = 4, m.n_heads = 4, m.n_kv_heads = 2, m.d_ff = 128;
  m.layer_pattern = "DDDG";
  m.delta_heads = 2, m.delta_key_dim = 16, m.delta_value_dim = 32, m.delta_chunk = 16;
  return m;
}

TEST(PlanDelta, ParametersByHand) {
  const ModelConfig m = tiny_hybrid();
  const ModelStats s = model_stats(m, 64);
  // P = 2 Hd Dk + 2 Hd Dv + 2 Hd = 64 + 128 + 4 = 196; W_in 196 x 64 + W_o 64 x 64.
  EXPECT_EQ(s.layers[0].attn, 196 * 64 + 64 * 64);
  EXPECT_TRUE(s.layers[0].delta);
  EXPECT_EQ(s.layers[0].norms, 2 * 64 + 32 + 2 * 2);  // two RMSNorms, output norm, A_log, dt_bias
  EXPECT_FALSE(s.layers[3].delta);
  EXPECT_EQ(s.layers[3].attn, (4 + 2 * 2) * 16 * 64 + 64 * 64);
  // embed + final norm + 3 D layers + 1 G layer, each with a 3 x 128 x 64 SwiGLU.
  const int64_t ffn = 3 * 128 * 64;
  const int64_t total = 320 * 64 + 64 + 3 * (16640 + 164 + ffn) + (12288 + 128 + ffn);
  EXPECT_EQ(total, 181676);
  EXPECT_EQ(s.total, total);
  ParamLayout L;
  build_layout(m, L);
  EXPECT_EQ(L.total(), total) << "planner and trainer layouts disagree";
}

TEST(PlanDelta, TrainingFlopsByHand) {
  const ModelConfig m = tiny_hybrid();
  // 6 x active matmul (head 320 x 64, 3 D layers and the G layer with their SwiGLUs)
  const double matmul = 320 * 64 + 3 * (16640 + 24576) + (12288 + 24576);
  EXPECT_EQ(double(active_matmul_params(m)), matmul);
  // G layer: 6 H (Dh + Dh) x mean keys (64 + 1) / 2; D layers: 3 Hd (4 c Dk + 2 c (Dk + Dv) + 2 c Dv + 6 Dk Dv)
  // with c = (C + 1) / 2, the mean row of the chunk's triangular C x C factors.
  const double attn = 6.0 * 4 * 32 * 32.5;
  const double delta = 3 * 3.0 * 2 * (4 * 8.5 * 16 + 2 * 8.5 * 48 + 2 * 8.5 * 32 + 6 * 16 * 32);
  EXPECT_DOUBLE_EQ(flops_per_token(m, 64), 6 * matmul + attn + delta);
  EXPECT_DOUBLE_EQ(flops_per_token(m, 64), 1200480.0);
  // At T = 8 the chunk is clipped to the sequence.
  const double delta8 = 3 * 3.0 * 2 * (4 * 4.5 * 16 + 2 * 4.5 * 48 + 2 * 4.5 * 32 + 6 * 16 * 32);
  EXPECT_DOUBLE_EQ(flops_per_token(m, 8), 6 * matmul + 6.0 * 4 * 32 * 4.5 + delta8);
}

TEST(PlanDelta, StateInsteadOfKvCache) {
  const ModelConfig m = tiny_hybrid();
  for (int64_t S : {16, 64, 1000}) {
    const ModelStats s = model_stats(m, S);
    EXPECT_EQ(s.kv_bytes_per_token, 2.0 * 2 * 16 * 2) << "only the G layer caches K and V (bf16)";
    EXPECT_EQ(s.kv_bytes_per_sequence, 128.0 * double(S));
    EXPECT_EQ(s.state_bytes_per_sequence, 3.0 * 2 * 32 * 16 * 4) << "fp32 Hd Dv Dk per D layer, any length";
    // Decode: 2 x matmul params + the G layer's S keys + 6 Hd Dk Dv per D layer.
    const double matmul = 320 * 64 + 3 * (16640 + 24576) + (12288 + 24576);
    EXPECT_DOUBLE_EQ(s.decode_flops_per_token, 2 * matmul + 2.0 * 4 * 32 * double(S) + 3 * 6.0 * 2 * 16 * 32);
  }
  // The inference cache: K/V (bf16, or fp32 at twice the bytes) plus the fp32 states.
  const ModelStats s = model_stats(m, 40);
  for (int64_t B : {1, 3}) {
    KvCache bf(m, B, 40, KvDtype::kBf16);
    EXPECT_EQ(double(bf.bytes()), double(B) * (s.kv_bytes_per_sequence + s.state_bytes_per_sequence));
    KvCache f32(m, B, 40, KvDtype::kF32);
    EXPECT_EQ(double(f32.bytes()), double(B) * (2 * s.kv_bytes_per_sequence + s.state_bytes_per_sequence));
  }
}

TEST(PlanDelta, ActivationTermsByHand) {
  const ModelConfig m = tiny_hybrid();
  ActivationOptions o;
  o.seq_len = 64;
  o.rows_per_token = 2;
  double sum = 0;
  for (const ActTerm& t : layer_activation_terms(m, 0, o))
    if (t.op.rfind("delta.", 0) == 0 || t.op.rfind("attn_norm", 0) == 0) sum += t.bytes_per_token;
  // norm input 2 x 64 + 4, norm output 2 x 64; q, k, v 2 x 2 x (16 + 16 + 32); gates 4 x 4; chunk states
  // 4 x 2 x 32 x 16 / 16; z 2 x 64; output 2 x 64 + 4 x 2; gated output 2 x 64.
  EXPECT_DOUBLE_EQ(sum, 132 + 128 + 256 + 16 + 256 + 128 + 136 + 128);
  // Tensor parallelism splits every term by t.
  o.tp = 2;
  double half = 0;
  for (const ActTerm& t : layer_activation_terms(m, 0, o))
    if (t.op.rfind("delta.", 0) == 0 || t.op.rfind("attn_norm", 0) == 0) half += t.bytes_per_token;
  EXPECT_DOUBLE_EQ(half, sum / 2);
}

}  // namespace
}  // namespace mt::plan
