// router.cpp — row-parallel routing; per-group statistics reduced serially in
// token order so losses and gradients are thread-count invariant.
#include "kernels/cpu/router.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "core/rng.h"

namespace mt {
namespace {

inline float logsumexp(const float* row, int64_t E) {
  float m = row[0];
  for (int64_t e = 1; e < E; ++e) m = std::max(m, row[e]);
  float s = 0.0f;
  for (int64_t e = 0; e < E; ++e) s += std::exp(row[e] - m);
  return m + std::log(s);
}

// Routing probability used by the balancing loss (softmax: the score itself;
// sigmoid: scores normalised to sum to one).
inline float prob(const float* srow, int64_t e, float ssum, ScoreFn fn) {
  return fn == ScoreFn::kSoftmax ? srow[e] : srow[e] / ssum;
}

// Per-group expert choice fractions f (groups, E).
void choice_fractions(std::vector<double>& f, const int32_t* idx, const RouterDims& d) {
  const int64_t groups = d.N / d.group;
  f.assign(groups * d.E, 0.0);
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t k = 0; k < d.K; ++k) f[(n / d.group) * d.E + idx[n * d.K + k]] += 1.0;
  for (double& x : f) x /= double(d.group * d.K);
}

// Per-thread statistics buffers, grown on first use: no allocation after the
// first step (docs/kernels.md lists every kernel that does this).
struct Stats {
  std::vector<double> f, P;
  std::vector<float> lse;  // router_losses: each row's logsumexp
};
thread_local Stats tls;

}  // namespace

void router_topk_forward(int32_t* idx, float* gate, float* scores, const float* logits,
                         const float* bias, const RouterDims& d) {
  MT_CHECK(d.K <= 64 && d.K <= d.E, "top_k {} out of range (E = {})", d.K, d.E);
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < d.N; ++n) {
    const float* l = logits + n * d.E;
    float* s = scores + n * d.E;
    if (d.score == ScoreFn::kSoftmax) {
      const float lse = logsumexp(l, d.E);
      for (int64_t e = 0; e < d.E; ++e) s[e] = std::exp(l[e] - lse);
    } else {
      for (int64_t e = 0; e < d.E; ++e) s[e] = 1.0f / (1.0f + std::exp(-l[e]));
    }
    int32_t* id = idx + n * d.K;
    float* g = gate + n * d.K;
    // Selection by insertion into a sorted top-K list; strict '>' keeps the
    // lower expert index on ties.
    float best[64];
    int64_t filled = 0;
    for (int64_t e = 0; e < d.E; ++e) {
      const float key = s[e] + (bias ? bias[e] : 0.0f);
      if (filled == d.K && !(key > best[d.K - 1])) continue;
      int64_t pos = filled < d.K ? filled++ : d.K - 1;
      while (pos > 0 && key > best[pos - 1]) {
        best[pos] = best[pos - 1];
        id[pos] = id[pos - 1];
        --pos;
      }
      best[pos] = key;
      id[pos] = int32_t(e);
    }
    float sum = 0.0f;
    for (int64_t k = 0; k < d.K; ++k) sum += s[id[k]];
    for (int64_t k = 0; k < d.K; ++k) g[k] = d.renormalize ? s[id[k]] / sum : s[id[k]];
  }
}

void router_losses(double* aux_loss, double* z_loss, const float* logits, const float* scores,
                   const int32_t* idx, const RouterDims& d) {
  const int64_t groups = d.N / d.group;
  std::vector<double>& f = tls.f;
  choice_fractions(f, idx, d);
  std::vector<double>& P = tls.P;
  P.assign(groups * d.E, 0.0);
  // The rows' logsumexps (an exp per logit: the pass's cost) on every
  // thread, then the sums in row order on this one, as before.
  std::vector<float>& lse = tls.lse;
  if (int64_t(lse.size()) < d.N) lse.resize(size_t(d.N));
#pragma omp parallel for schedule(static) if (d.N * d.E >= 16384)
  for (int64_t n = 0; n < d.N; ++n) lse[size_t(n)] = logsumexp(logits + n * d.E, d.E);
  double z = 0.0;
  for (int64_t n = 0; n < d.N; ++n) {
    const float* s = scores + n * d.E;
    float ssum = 0.0f;
    for (int64_t e = 0; e < d.E; ++e) ssum += s[e];
    for (int64_t e = 0; e < d.E; ++e) P[(n / d.group) * d.E + e] += prob(s, e, ssum, d.score);
    const double l = lse[size_t(n)];
    z += l * l;
  }
  double aux = 0.0;
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t e = 0; e < d.E; ++e) aux += f[g * d.E + e] * P[g * d.E + e] / double(d.group);
  *aux_loss = double(d.E) * aux / double(groups);
  *z_loss = z / double(d.N);
}

void router_backward(float* dlogits, const float* dgate, const float* logits, const float* scores,
                     const int32_t* idx, const float* gate, const RouterDims& d, float aux_coef,
                     float z_coef) {
  const int64_t groups = d.N / d.group;
  std::vector<double>& f = tls.f;
  if (aux_coef != 0.0f) choice_fractions(f, idx, d);
  // d(aux)/dP_e for a token of group g: E * f_{g,e} / (G * groups)
  const double aux_scale = double(d.E) / double(d.group * groups);
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < d.N; ++n) {
    const float* s = scores + n * d.E;
    const float* l = logits + n * d.E;
    float* dl = dlogits + n * d.E;
    const int32_t* id = idx + n * d.K;
    const float* g = gate + n * d.K;
    const float* dg = dgate + n * d.K;
    float ds[256];
    float* dsv = d.E <= 256 ? ds : nullptr;
    MT_CHECK(dsv != nullptr, "router supports at most 256 experts, got {}", d.E);
    for (int64_t e = 0; e < d.E; ++e) dsv[e] = 0.0f;
    if (d.renormalize) {
      float sum = 0.0f, dot = 0.0f;
      for (int64_t k = 0; k < d.K; ++k) {
        sum += s[id[k]];
        dot += dg[k] * g[k];
      }
      for (int64_t k = 0; k < d.K; ++k) dsv[id[k]] += (dg[k] - dot) / sum;
    } else {
      for (int64_t k = 0; k < d.K; ++k) dsv[id[k]] += dg[k];
    }
    if (aux_coef != 0.0f) {
      const double* fg = f.data() + (n / d.group) * d.E;
      if (d.score == ScoreFn::kSoftmax) {
        for (int64_t e = 0; e < d.E; ++e) dsv[e] += float(aux_coef * aux_scale * fg[e]);
      } else {
        float ssum = 0.0f, dot = 0.0f;
        for (int64_t e = 0; e < d.E; ++e) ssum += s[e];
        for (int64_t e = 0; e < d.E; ++e) dot += float(aux_scale * fg[e]) * s[e] / ssum;
        for (int64_t e = 0; e < d.E; ++e) dsv[e] += aux_coef * (float(aux_scale * fg[e]) - dot) / ssum;
      }
    }
    if (d.score == ScoreFn::kSoftmax) {
      float dot = 0.0f;
      for (int64_t e = 0; e < d.E; ++e) dot += s[e] * dsv[e];
      for (int64_t e = 0; e < d.E; ++e) dl[e] = s[e] * (dsv[e] - dot);
    } else {
      for (int64_t e = 0; e < d.E; ++e) dl[e] = dsv[e] * s[e] * (1.0f - s[e]);
    }
    if (z_coef != 0.0f) {
      const float lse = logsumexp(l, d.E);
      const float c = z_coef * 2.0f * lse / float(d.N);
      for (int64_t e = 0; e < d.E; ++e) dl[e] += c * std::exp(l[e] - lse);
    }
  }
}

void router_random_logits(float* logits, int64_t layer, int64_t N, int64_t E, int64_t T) {
  constexpr uint64_t kSeed = 0x62616c616e6365;  // "balance"
  const int64_t blocks = (E + 3) / 4;           // a Philox block gives four words
  for (int64_t n = 0; n < N; ++n) {
    const int64_t t = n % T;
    for (int64_t b = 0; b < blocks; ++b) {
      uint32_t w[4];
      philox_block(kSeed, uint64_t(layer), uint64_t(t * blocks + b), w);
      for (int64_t e = 4 * b; e < std::min(E, 4 * b + 4); ++e) logits[n * E + e] = uniform01(w[e - 4 * b]);
    }
  }
}

}  // namespace mt
