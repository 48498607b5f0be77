// rollouts.h — the parts of GRPO that need no model: group-relative
// advantages, the training row of a rollout and the weights its tokens
// carry into the loss (kernels/cpu/policy_loss.h; train/rl_feed.h runs them).
//
// A rollout's row: its context — the end-of-document id, then the prompt —
// read as input only (no-loss bit, core/token_flags.h), then the completion
// the policy sampled (targets; it ends with the end-of-document id unless it
// ran out of rl.max_new_tokens), then flagged end-of-document ids up to the
// row's length. Rows never share attention: each is one rollout.
#pragma once
#include <cstdint>
#include <vector>

#include "core/token_flags.h"
#include "train/rl_config.h"

namespace mt {

// Advantages of consecutive groups of G rewards: r - mean(group), divided by
// the group's standard deviation + 1e-4 under grpo (DeepSeekMath's outcome
// supervision; population std, as TRL), not under dr_grpo. A group whose
// rewards are all equal teaches nothing: its advantages are exactly 0.
std::vector<float> group_advantages(const std::vector<double>& rewards, int64_t G, RlLoss loss);

// The loss weight of each completion token of a rollout in a batch of
// `rollouts`: grpo 1 / (rollouts x completion_len) — a mean per completion,
// then over the batch; dr_grpo 1 / (rollouts x max_new_tokens), one constant.
float rollout_token_weight(RlLoss loss, int64_t rollouts, int64_t completion_len, int64_t max_new_tokens);

// The row (stride tokens: rows of T + 1 + mtp_depth) of a context and its
// completion; context + completion must fit in stride (checked).
void rollout_row(const std::vector<int32_t>& context, const std::vector<int32_t>& completion, int32_t separator,
                 int64_t stride, int32_t* row);

// The T positions of that row: position t predicts row[t + 1], so the
// completion's tokens are predicted at [context - 1, context - 1 + completion).
// weights there = w, 0 elsewhere; advantages there = a, 0 elsewhere.
void rollout_positions(int64_t context_len, int64_t completion_len, float w, float a, int64_t T, float* weights,
                       float* advantages);

// A completion's ids as floats, for the rollout exchange and checkpoints:
// an id as itself, an environment's id (flagged no-loss) as -(id + 2), so
// -1 is free to pad past a completion's end. Exact for ids below 2^24 - 2
// (vocabularies are far smaller).
inline float completion_id_to_float(int32_t t) {
  return (t & kNoLossBit) != 0 ? -float(token_id(t) + 2) : float(t);
}
inline int32_t completion_id_from_float(float f) { return f >= 0 ? int32_t(f) : without_loss(int32_t(-f) - 2); }

}  // namespace mt
