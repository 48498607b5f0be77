// distill_loss.cpp — reverse and forward KL over the vocabulary, fused with
// their logits gradient, row-parallel (see distill_loss.h).
#include "kernels/cpu/distill_loss.h"

#include <cmath>

#include "kernels/cpu/cross_entropy.h"

namespace mt {

void distill_loss_forward_backward(float* losses, float* logits, const float* teacher_logp, const float* weights,
                                   int64_t R, int64_t V, DistillDivergence d, float grad_scale, float* entropy) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < R; ++r) {
    float* z = logits + r * V;
    const float* lt = teacher_logp + r * V;
    const float w = weights[r];
    if (w == 0.0f) {
      losses[r] = 0.0f;
      if (entropy) entropy[r] = 0.0f;
      for (int64_t v = 0; v < V; ++v) z[v] = 0.0f;
      continue;
    }
    const float lse = row_logsumexp(z, V);
    double L = 0.0, H = 0.0;
    if (entropy)
      for (int64_t v = 0; v < V; ++v) {
        const float ls = z[v] - lse;
        H -= double(std::exp(ls)) * double(ls);
      }
    if (d == DistillDivergence::kReverseKl) {
      for (int64_t v = 0; v < V; ++v) {
        const float ls = z[v] - lse;
        L += double(std::exp(ls)) * double(ls - lt[v]);
      }
      const float g = w * grad_scale, Lf = float(L);
      for (int64_t v = 0; v < V; ++v) {
        const float ls = z[v] - lse;
        z[v] = g * std::exp(ls) * (ls - lt[v] - Lf);
      }
    } else {
      for (int64_t v = 0; v < V; ++v) {
        const float q = std::exp(lt[v]);
        if (q > 0.0f) L += double(q) * double(lt[v] - (z[v] - lse));
      }
      const float g = w * grad_scale;
      for (int64_t v = 0; v < V; ++v) z[v] = g * (std::exp(z[v] - lse) - std::exp(lt[v]));
    }
    losses[r] = w * float(L);
    if (entropy) entropy[r] = float(H);
  }
}

void log_softmax_rows(float* logits, int64_t R, int64_t V) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < R; ++r) {
    float* z = logits + r * V;
    const float lse = row_logsumexp(z, V);
    for (int64_t v = 0; v < V; ++v) z[v] -= lse;
  }
}

}  // namespace mt
