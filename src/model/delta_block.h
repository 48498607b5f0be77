// delta_block.h — pre-norm gated-delta (linear attention) sub-block of a "D" layer (Gated DeltaNet,
// Yang, Kautz & Hatamizadeh, ICLR 2025, section 3.3 and figure 1), taking the place of attention:
//   [q | k | v | z | a | b] = W_in · rmsnorm(x_in)
//   q, k <- l2norm per head;  g = -exp(A_log) softplus(a + dt_bias);  beta = sigmoid(b)
//   o = gated_delta(q, k, v, g, beta)                    (kernels/cpu/gated_delta.h)
//   x_mid = x_in + W_o · (rmsnorm_head(o) * silu(z))
// Legend: N = B*T tokens, D model dim, Hd heads, Dk / Dv per-head key / value dims, NC chunks per
// sequence, P = 2 Hd Dk + 2 Hd Dv + 2 Hd projection width. No short convolution (see
// docs/architecture.md): the state per sequence is exactly Hd Dv Dk floats.
#pragma once
#include <cstdint>
#include <vector>

#include "model/block_context.h"
#include "model/buffer_sizer.h"
#include "model/weights.h"

namespace mt {

struct DeltaActs {
  GemmActivation a;                    // (N, D): normed input, read only by W_in's GEMMs
  std::vector<float> rstd_a;           // (N)
  std::vector<float> proj;             // (N, P)
  std::vector<float> q, k, rn_q, rn_k; // (B, Hd, T, Dk) unit rows, (B Hd T) their 1/norms
  std::vector<float> v;                // (B, Hd, T, Dv)
  std::vector<float> g, beta;          // (B, Hd, T)
  std::vector<float> states;           // (B, Hd, NC, Dv, Dk) chunk-entry states
  std::vector<float> o;                // (B, Hd, T, Dv)
  std::vector<float> o_flat, rstd_o;   // (N, Hd Dv), (N Hd)
  std::vector<float> on;               // (N, Hd Dv) normed
  GemmActivation y;                    // (N, Hd Dv) gated: read only by W_o's GEMMs
  void allocate(const ModelConfig& c, int64_t B, int64_t T, BufferSizer& s);
  int64_t bytes() const;
};

// Backward scratch shared by all D layers.
struct DeltaScratch {
  std::vector<float> dproj, dq, dk, dv, dg, dbeta, do_heads, dflat, dflat2, da;
  void allocate(const ModelConfig& c, int64_t B, int64_t T, BufferSizer& s);
  int64_t bytes() const;
};

// Projection width P of a D layer.
int64_t delta_proj_width(const ModelConfig& c);
// Epsilon of the q / k L2 norm (FLA's: keeps a zero key finite without moving unit-scale rows).
inline float delta_l2_eps() { return 1e-6f; }

// x_mid (N, D) = x_in + gated_delta_block(x_in).
void delta_block_forward(float* x_mid, DeltaActs& a, const float* x_in, const DeltaOffsets& w,
                         const BlockContext& ctx);

// dres (N, D): gradient w.r.t. x_mid on entry, w.r.t. x_in on exit.
void delta_block_backward(float* dres, DeltaScratch& s, const DeltaActs& a, const float* x_in,
                          const DeltaOffsets& w, const BlockContext& ctx);

}  // namespace mt
