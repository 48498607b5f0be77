// rollouts.cpp — advantages, rows and token weights of rollouts (see rollouts.h).
#include "train/rollouts.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/token_flags.h"

namespace mt {

std::vector<float> group_advantages(const std::vector<double>& rewards, int64_t G, RlLoss loss) {
  MT_CHECK(G > 0 && int64_t(rewards.size()) % G == 0, "{} rewards in groups of {}", rewards.size(), G);
  std::vector<float> adv(rewards.size(), 0.0f);
  for (size_t g0 = 0; g0 < rewards.size(); g0 += size_t(G)) {
    double mean = 0.0, var = 0.0;
    for (int64_t i = 0; i < G; ++i) mean += rewards[g0 + size_t(i)];
    mean /= double(G);
    for (int64_t i = 0; i < G; ++i) var += (rewards[g0 + size_t(i)] - mean) * (rewards[g0 + size_t(i)] - mean);
    const double scale = loss == RlLoss::kGrpo ? 1.0 / (std::sqrt(var / double(G)) + 1e-4) : 1.0;
    for (int64_t i = 0; i < G; ++i) {
      const double d = rewards[g0 + size_t(i)] - mean;
      adv[g0 + size_t(i)] = var == 0.0 ? 0.0f : float(d * scale);
    }
  }
  return adv;
}

float rollout_token_weight(RlLoss loss, int64_t rollouts, int64_t completion_len, int64_t max_new_tokens) {
  const int64_t per = loss == RlLoss::kGrpo ? completion_len : max_new_tokens;
  return per > 0 ? float(1.0 / (double(rollouts) * double(per))) : 0.0f;
}

void rollout_row(const std::vector<int32_t>& context, const std::vector<int32_t>& completion, int32_t separator,
                 int64_t stride, int32_t* row) {
  const int64_t c = int64_t(context.size()), n = int64_t(completion.size());
  MT_CHECK(c + n <= stride, "rollout of {} + {} tokens in a row of {}", c, n, stride);
  for (int64_t i = 0; i < c; ++i) row[i] = without_loss(context[size_t(i)]);
  for (int64_t i = 0; i < n; ++i) row[c + i] = completion[size_t(i)];
  std::fill(row + c + n, row + stride, without_loss(separator));
}

void rollout_positions(int64_t context_len, int64_t completion_len, float w, float a, int64_t T, float* weights,
                       float* advantages) {
  std::fill(weights, weights + T, 0.0f);
  std::fill(advantages, advantages + T, 0.0f);
  const int64_t lo = std::max<int64_t>(0, context_len - 1), hi = std::min(T, context_len - 1 + completion_len);
  for (int64_t t = lo; t < hi; ++t) {
    weights[t] = w;
    advantages[t] = a;
  }
}

}  // namespace mt
