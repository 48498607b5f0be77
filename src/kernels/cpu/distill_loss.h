// distill_loss.h — per-token distillation losses over the full vocabulary
// on one chunk of student logits, fused with their gradient as
// cross_entropy.h is: logits (R, V) are overwritten with dlogits.
//
// With the student's p = softmax(z), ls = log p and the teacher's
// log-probabilities lt (R, V) at the same positions:
//   reverse KL(student || teacher) = sum_v p_v (ls_v - lt_v)       on-policy distillation
//       dL/dz_v = p_v (ls_v - lt_v - L)                            (mode-seeking; Agarwal et
//                                                                   al. 2024 GKD, Thinking Machines 2025)
//   forward KL(teacher || student) = sum_v q_v (lt_v - ls_v), q = exp(lt)
//       dL/dz_v = p_v - q_v                                         (word-level KD, Hinton et al.)
//   loss = sum_r weights[r] * L_r
// entropy (nullable): each row's student entropy -sum_v p_v ls_v (0 on rows
// of weight 0), what the run reports beside the divergence.
// Rows with weight 0 are skipped (zero loss, zero gradient). Teacher
// log-probabilities of -inf (a token the teacher never emits) are handled:
// they add nothing to forward KL, and under reverse KL a student that puts
// mass there has an infinite loss — callers pass finite log-softmax values.
#pragma once
#include <cstdint>

namespace mt {

enum class DistillDivergence { kReverseKl, kForwardKl };

void distill_loss_forward_backward(float* losses, float* logits, const float* teacher_logp, const float* weights,
                                   int64_t R, int64_t V, DistillDivergence d, float grad_scale,
                                   float* entropy = nullptr);

// Log-softmax of each row of logits (R, V) in place.
void log_softmax_rows(float* logits, int64_t R, int64_t V);

}  // namespace mt
