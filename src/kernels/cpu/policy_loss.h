// policy_loss.h — the per-token policy-gradient loss of GRPO (Shao et al.
// 2024, DeepSeekMath) and its variants on one chunk of logits, fused with its
// gradient as cross_entropy.h is: logits (R, V) are overwritten with dlogits.
//
// For row r with sampled token y, current log-probability lp = log softmax(z)[y],
// ratio q = exp(lp - old_logp[r]) and advantage A = advantages[r]:
//
//   L_r = -min(q A, clip(q, 1 - clip_low, 1 + clip_high) A)      PPO's clipped surrogate
//         + kl_beta * (exp(ref - lp) - (ref - lp) - 1)          DeepSeekMath's k3 estimate of KL(pi || ref)
//   loss = sum_r weights[r] * L_r
//
// The weights carry the aggregation: GRPO's 1 / (G |o_i|) (a mean per
// sequence, then over the group), Dr. GRPO's 1 / (G L_max) (no length
// normalisation; Liu et al. 2025), or a token mean over the batch (DAPO).
// The gradient of a clipped token is zero (the clipped branch is constant);
// dL_r/dlp = -A q (unclipped) + kl_beta (1 - exp(ref - lp)), and
// dlp/dz = onehot(y) - softmax(z). targets < 0 are ignored (zero loss,
// zero gradient, zero stats). old_logp may be null: the policy that sampled
// the tokens is the current one (the first optimisation pass over fresh
// rollouts), so q = 1 and the gradient is -A dlp (REINFORCE with the group
// baseline), with lp itself returned in the stats for the later passes.
#pragma once
#include <cstdint>

namespace mt {

struct PolicyLossParams {
  float clip_low = 0.2f, clip_high = 0.2f;  // PPO's epsilon below and above 1 (DAPO's clip-higher: a larger high)
  float kl_beta = 0.0f;                     // 0 = no KL term (ref_logp may be null)
};

// Per row: what RL's metrics report.
struct PolicyTokenStats {
  float logp = 0.0f;     // log-probability of the target under the current policy
  float entropy = 0.0f;  // of the current policy's distribution
  float kl = 0.0f;       // the k3 estimate (0 without ref_logp)
  uint8_t clipped = 0;   // the clipped branch was taken (no gradient)
};

void policy_loss_forward_backward(float* losses, PolicyTokenStats* stats, float* logits, const int32_t* targets,
                                  const float* weights, const float* advantages, const float* old_logp,
                                  const float* ref_logp, int64_t R, int64_t V, const PolicyLossParams& p,
                                  float grad_scale);

}  // namespace mt
