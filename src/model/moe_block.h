// moe_block.h — the FFN sub-block of one layer, dense SwiGLU or MoE:
// x_out = x_mid + ffn(rmsnorm(x_mid)).
// MoE: router (top-k) -> static-capacity dispatch -> experts -> weighted
// combine; optional latent projection (down, RMSNorm, experts in Dl, up),
// shared experts on the normed input, optional RMSNorm on the block output.
#pragma once
#include <cstdint>
#include <vector>

#include "model/block_context.h"
#include "model/buffer_sizer.h"
#include "model/weights.h"

namespace mt {

struct FfnStats {
  double aux_loss = 0.0, z_loss = 0.0;  // unweighted, this layer
  int64_t dropped = 0, assignments = 0;
  std::vector<int64_t> load;            // (E) tokens choosing each expert (before capacity)
  std::vector<int64_t> dropped_per_sequence;  // (B) of `dropped`, by the sequence of the dropped token
};

struct FfnActs {
  std::vector<float> m, rstd_m;            // (N, D): normed input
  // dense
  std::vector<float> h13;                  // (N, 2F)
  GemmActivation z;                        // (N, F): read only by W2's GEMMs
  // moe
  std::vector<float> logits, scores;       // (N, E)
  std::vector<int32_t> idx, slot;          // (N, K)
  std::vector<float> gate;                 // (N, K)
  std::vector<int64_t> begin, kept;        // (E + 1), (E)
  std::vector<int32_t> row_token;          // (R)
  std::vector<float> mlat, mln, rstd_l;    // (N, Dl) x2, (N): latent only
  std::vector<float> xe, he, ze, ye;       // (R, Din), (R, 2F), (R, F), (R, Din)
  std::vector<float> comb;                 // (N, Din): combined routed output
  std::vector<std::vector<float>> sh13;    // per shared expert (N, 2F)
  std::vector<GemmActivation> sz;          // per shared expert (N, F): read only by its W2's GEMMs
  std::vector<float> total, rstd_o;        // (N, D) pre-out-norm, (N): out_norm only
  int64_t rows = 0;                        // R used this step
  // Sizes every buffer through `s` (allocates, or only counts for the planner).
  void allocate(const ModelConfig& c, int64_t layer, int64_t B, int64_t T, BufferSizer& s);
  int64_t bytes() const;                   // data bytes currently held
};

struct FfnScratch {
  std::vector<float> dm, dtotal, dcomb, dxin, dmlat, dlogits, dgate, dye, dxe, dz, dh13;
  void allocate(const ModelConfig& c, int64_t B, int64_t T, BufferSizer& s);
  int64_t bytes() const;
};

// Rows of each expert segment are padded to this multiple (fewer GEMM shapes).
inline constexpr int64_t kExpertRowAlign = 16;

// x_out = x_mid + ffn(x_mid). `router_bias` (E) or null. Fills stats.
void ffn_block_forward(float* x_out, FfnActs& a, FfnStats& stats, const float* x_mid,
                       const LayerOffsets& w, const float* router_bias, int64_t layer,
                       const BlockContext& ctx);

// dres: gradient w.r.t. x_out on entry, w.r.t. x_mid on exit. aux_coef and
// z_coef are the loss weights of this layer's router losses (already scaled).
void ffn_block_backward(float* dres, FfnScratch& s, const FfnActs& a, const float* x_mid,
                        const LayerOffsets& w, int64_t layer, float aux_coef, float z_coef,
                        const BlockContext& ctx);

}  // namespace mt
