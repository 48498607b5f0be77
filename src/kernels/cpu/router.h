// router.h — top-k token-choice router and its auxiliary losses.
// Shapes: logits, scores (N, E); idx, gate (N, K). Scores are softmax(logits)
// or sigmoid(logits). Selection ranks scores + bias (bias may be null: the
// aux-loss-free balancing bias affects only which experts are chosen), ties to
// the lower expert index. gate = chosen scores, divided by their sum when
// renormalising.
#pragma once
#include <cstdint>

namespace mt {

enum class ScoreFn { kSoftmax, kSigmoid };

struct RouterDims {
  int64_t N, E, K;
  ScoreFn score;
  bool renormalize;
  int64_t group;  // tokens per routing group (load-balancing loss is per group, then averaged)
};

void router_topk_forward(int32_t* idx, float* gate, float* scores, const float* logits,
                         const float* bias, const RouterDims& d);

// Switch load-balancing loss E * sum_e f_e P_e (f_e: fraction of the group's
// N*K choices that picked e; P_e: mean routing probability of e, where the
// probability is the softmax score, or the sigmoid score normalised over
// experts), averaged over groups; and z-loss mean_n logsumexp(logits_n)^2.
void router_losses(double* aux_loss, double* z_loss, const float* logits, const float* scores,
                   const int32_t* idx, const RouterDims& d);

// dlogits (N, E) written: from dgate (N, K) through renormalisation and the
// score function, plus aux_coef * d(aux)/d(logits) + z_coef * d(z)/d(logits).
void router_backward(float* dlogits, const float* dgate, const float* logits, const float* scores,
                     const int32_t* idx, const float* gate, const RouterDims& d, float aux_coef,
                     float z_coef);

// Forced-balance routing for benchmarks (model.router_force_balance):
// logits (N, E) overwritten with uniform [0, 1) values drawn from Philox by
// (layer, position in the sequence t = n mod T, expert), so every sequence
// routes alike, whatever the batch, thread count or number of ranks.
void router_random_logits(float* logits, int64_t layer, int64_t N, int64_t E, int64_t T);

}  // namespace mt
