// spherical_kmeans.cpp — see spherical_kmeans.h.
#include "data/topics/spherical_kmeans.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"
#include "core/rng.h"

namespace mt {
namespace {

float dot(const float* a, const float* b, int64_t d) {
  float s = 0;
  for (int64_t i = 0; i < d; ++i) s += a[i] * b[i];
  return s;
}

double uniform(uint64_t seed, uint64_t i) {
  uint32_t w[4];
  philox_block(seed, 0x5eed, i, w);
  return (double(w[0] >> 5) * 67108864.0 + double(w[1] >> 6)) / 9007199254740992.0;
}

// Greedy k-means++: per centroid, 2 + ln K candidates drawn with probability
// proportional to the squared cosine distance; the one that lowers the
// potential most is kept (the variant scikit-learn uses).
std::vector<float> seed_centroids(const float* x_ND, int64_t n, int64_t d, int64_t k, uint64_t seed) {
  std::vector<float> cent(static_cast<size_t>(k * d));
  std::vector<double> dist(size_t(n), std::numeric_limits<double>::infinity());
  auto with = [&](int64_t c, std::vector<double>& out) {
    const float* y = x_ND + c * d;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const double x = std::max(0.0, 1.0 - double(dot(x_ND + i * d, y, d)));
      out[size_t(i)] = std::min(dist[size_t(i)], x * x);
    }
  };
  uint64_t draw = 0;
  int64_t first = std::min<int64_t>(n - 1, int64_t(uniform(seed, draw++) * double(n)));
  std::copy(x_ND + first * d, x_ND + (first + 1) * d, cent.begin());
  with(first, dist);
  const int trials = 2 + int(std::log(double(k)));
  std::vector<double> cand_dist(static_cast<size_t>(n)), best_dist;
  for (int64_t c = 1; c < k; ++c) {
    double total = 0;
    for (double x : dist) total += x;  // row order: thread-count invariant
    int64_t best = c % n;
    double best_pot = std::numeric_limits<double>::infinity();
    for (int t = 0; t < trials; ++t) {
      int64_t cand = (c + t) % n;
      double r = uniform(seed, draw++) * total;
      if (total > 0)
        for (int64_t i = 0; i < n; ++i) {
          r -= dist[size_t(i)];
          if (r <= 0 && dist[size_t(i)] > 0) { cand = i; break; }
        }
      with(cand, cand_dist);
      double pot = 0;
      for (double x : cand_dist) pot += x;
      if (pot < best_pot) { best_pot = pot; best = cand; best_dist = cand_dist; }
    }
    std::copy(x_ND + best * d, x_ND + (best + 1) * d, cent.begin() + c * d);
    dist = best_dist;
  }
  return cent;
}

}  // namespace

void normalize_row(float* x_D, int64_t d) {
  double nn = 0;
  for (int64_t i = 0; i < d; ++i) nn += double(x_D[i]) * x_D[i];
  if (nn <= 0) return;
  const float inv = float(1.0 / std::sqrt(nn));
  for (int64_t i = 0; i < d; ++i) x_D[i] *= inv;
}

int32_t nearest_centroid(const float* x_D, const float* cent_KD, int64_t k, int64_t d) {
  int32_t best = 0;
  float best_s = -std::numeric_limits<float>::infinity();
  for (int64_t c = 0; c < k; ++c) {
    const float s = dot(x_D, cent_KD + c * d, d);
    if (s > best_s) { best_s = s; best = int32_t(c); }
  }
  return best;
}

KmeansResult spherical_kmeans(const float* x_ND, int64_t n, int64_t d, int64_t k, int64_t iterations,
                              uint64_t seed, const std::vector<float>& init_KD) {
  MT_CHECK(k >= 1 && k <= n, "k = {} for n = {}", k, n);
  MT_CHECK(init_KD.empty() || int64_t(init_KD.size()) == k * d, "init has {} floats, want {}", init_KD.size(), k * d);
  KmeansResult r;
  r.cent_KD = init_KD.empty() ? seed_centroids(x_ND, n, d, k, seed) : init_KD;
  r.assign.assign(size_t(n), 0);
  std::vector<float> sim(static_cast<size_t>(n));
  std::vector<double> sum(static_cast<size_t>(k * d));
  std::vector<int64_t> count(static_cast<size_t>(k));
  for (int64_t it = 0; it <= iterations; ++it) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const int32_t c = nearest_centroid(x_ND + i * d, r.cent_KD.data(), k, d);
      r.assign[size_t(i)] = c;
      sim[size_t(i)] = dot(x_ND + i * d, r.cent_KD.data() + c * d, d);
    }
    if (it == iterations) break;  // the last pass only assigns
    std::fill(sum.begin(), sum.end(), 0.0);
    std::fill(count.begin(), count.end(), 0);
    for (int64_t i = 0; i < n; ++i) {
      const int32_t c = r.assign[size_t(i)];
      ++count[size_t(c)];
      for (int64_t j = 0; j < d; ++j) sum[size_t(c * d + j)] += x_ND[i * d + j];
    }
    for (int64_t c = 0; c < k; ++c) {
      float* y = r.cent_KD.data() + c * d;
      if (count[size_t(c)] == 0) {
        // An empty cluster takes the row worst served by its centroid
        // (lowest index on ties), which is then served perfectly.
        const int64_t worst = std::min_element(sim.begin(), sim.end()) - sim.begin();
        std::copy(x_ND + worst * d, x_ND + (worst + 1) * d, y);
        sim[size_t(worst)] = 2.0f;
        continue;
      }
      for (int64_t j = 0; j < d; ++j) y[j] = float(sum[size_t(c * d + j)]);
      normalize_row(y, d);
    }
  }
  return r;
}

}  // namespace mt
