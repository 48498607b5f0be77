// policy_loss.cpp — GRPO's clipped surrogate with a k3 KL term, row-parallel,
// vectorised like cross_entropy.cpp (see policy_loss.h).
#include "kernels/cpu/policy_loss.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/simd.h"

namespace mt {

void policy_loss_forward_backward(float* losses, PolicyTokenStats* stats, float* logits, const int32_t* targets,
                                  const float* weights, const float* advantages, const float* old_logp,
                                  const float* ref_logp, int64_t R, int64_t V, const PolicyLossParams& p,
                                  float grad_scale) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < R; ++r) {
    float* row = logits + r * V;
    const int32_t y = targets[r];
    if (y < 0) {
      losses[r] = 0.0f;
      stats[r] = PolicyTokenStats{};
      std::fill(row, row + V, 0.0f);
      continue;
    }
    const float lse = row_logsumexp(row, V);
    const float lp = row[y] - lse;
    // Entropy: lse - sum_v p_v z_v.
    double pz = 0.0;
    {
      using namespace simd;
      const Vec vlse = set1(lse);
      Vec acc = zero();
      for (int64_t v = 0; v < V; v += kLanes) {
        const Mask k = tail_mask(V - v);
        const Vec z = load(k, row + v);
        acc = mask_add(acc, k, mul(simd::exp(sub(z, vlse)), z));
      }
      pz = reduce_add(acc);
    }
    const float A = advantages[r];
    const float q = old_logp != nullptr ? std::exp(lp - old_logp[r]) : 1.0f;
    const float q_clipped = std::clamp(q, 1.0f - p.clip_low, 1.0f + p.clip_high);
    const float unclipped = q * A, clipped = q_clipped * A;
    // The clipped branch is the minimum only where it differs: then its gradient is zero.
    const bool took_clip = clipped < unclipped;
    float loss = -std::min(unclipped, clipped), dlp = took_clip ? 0.0f : -A * q;
    float kl = 0.0f;
    if (ref_logp != nullptr && p.kl_beta != 0.0f) {
      const float d = ref_logp[r] - lp;
      const float e = std::exp(d);
      kl = e - d - 1.0f;
      loss += p.kl_beta * kl;
      dlp += p.kl_beta * (1.0f - e);
    }
    losses[r] = weights[r] * loss;
    stats[r] = PolicyTokenStats{lp, lse - float(pz), kl, uint8_t(took_clip ? 1 : 0)};
    // dL/dz_v = g (onehot_v - p_v), g = weight * dL/dlp * grad_scale.
    const float g = weights[r] * dlp * grad_scale;
    const simd::Vec vlse = simd::set1(lse), vneg = simd::set1(-g);
    for (int64_t v = 0; v < V; v += simd::kLanes) {
      const simd::Mask k = simd::tail_mask(V - v);
      const simd::Vec pv = simd::exp(simd::sub(simd::load(k, row + v), vlse));
      simd::store(row + v, k, simd::mul(pv, vneg));
    }
    row[y] += g;
  }
}

}  // namespace mt
