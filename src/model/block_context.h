// block_context.h — what every block's forward/backward needs besides its
// own activations: config, batch geometry, precision, and the flat buffers
// (params read, grads accumulated) addressed by the offsets in weights.h,
// through the spans a ParamProvider handed out for the current layer.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "model/attention_kernel.h"
#include "model/config.h"
#include "model/parallel_hooks.h"

namespace mt {

// Context parallelism's whole-sequence keys and values (B, Hkv, T, Dh; MLA:
// B, H, T, Dqk and Dv) as the attention kernel reads them, and their
// gradients; MLA's are decompressed from the gathered latent and RoPE key
// (B, T, Dc) and (B, T, Dr), with W_UKV's output and the gradients of all
// three. Shared by every layer.
struct ContextBuffers {
  std::vector<float> k, v, dk, dv;
  std::vector<float> latent, rope_key, kvf, dkvf, dlatent, drope;  // MLA only
};

struct BlockContext {
  const ModelConfig* c = nullptr;
  int64_t B = 0, T = 0, N = 0;  // N = B * T tokens
  MatmulPrecision prec = MatmulPrecision::kFp32;
  AttentionKernel attention = AttentionKernel::kAuto;  // train.attention_kernel
  ParamSpan w;               // this layer's dense tensors (params read, grads accumulated)
  ParamSpan we;              // its routed experts held by this process
  ExpertDispatcher* experts = nullptr;  // routed rows to the experts and back
  const float* rope_cos = nullptr;  // (T, Dh/2)
  const float* rope_sin = nullptr;
  // (B, T) document start of every token (train.document_mask), or null:
  // attention and gated-delta layers keep to a token's document.
  const int32_t* doc_start = nullptr;
  // Context parallelism (dist.cp), or null: the T rows above are this
  // process's positions q_pos of sequences of T_seq tokens; attention reads
  // the other positions' keys and values through cp into cp_buf.
  ContextExchange* cp = nullptr;
  const int32_t* q_pos = nullptr;
  int64_t T_seq = 0;
  ContextBuffers* cp_buf = nullptr;

  const float* p(int64_t off) const { return w.at(off); }
  float* g(int64_t off) const { return w.grad(off); }
  // The gradient of [off, off + n), written whole by the product that takes it (ParamSpan::grad_whole).
  WeightGrad gw(int64_t off, int64_t n) const { return w.grad_whole(off, n); }
  const float* pe(int64_t off) const { return we.at(off); }
  float* ge(int64_t off) const { return we.grad(off); }
  WeightGrad gwe(int64_t off, int64_t n) const { return we.grad_whole(off, n); }
};

}  // namespace mt
