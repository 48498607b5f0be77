// labelers.cpp — hashed word TF-IDF features, k-means++ seeding and Lloyd
// iterations on the unit sphere; the Witten-Bell byte n-gram model; quantile
// cuts. Reductions run in document order so results do not depend on threads.
#include "data/labelers.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "core/hash.h"
#include "core/rng.h"

namespace mt {
namespace {

using Sparse = std::vector<std::pair<uint32_t, float>>;

constexpr size_t kFeatureBytes = 64 << 10;  // features from the first 64 KiB of a document

// Hashes of the lower-cased alphanumeric words. Unigrams only: with word
// bigrams, nearly every bigram of a short document is unique to it, which
// drowns the shared topical words (measured: synthetic 3-topic corpora were
// merged by 3 of 5 seeds with bigrams, none without).
void word_hashes(std::string_view text, std::vector<uint64_t>& out) {
  out.clear();
  text = text.substr(0, kFeatureBytes);
  std::string w;
  auto emit = [&] {
    if (w.empty()) return;
    out.push_back(xxh64(w.data(), w.size(), 0x70c1));
    w.clear();
  };
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || u >= 0x80) w += char(std::tolower(u));
    else emit();
  }
  emit();
}

Sparse features(std::string_view text, const std::vector<float>& idf, uint64_t dims) {
  std::vector<uint64_t> hs;
  word_hashes(text, hs);
  std::vector<uint32_t> idx(hs.size());
  for (size_t i = 0; i < hs.size(); ++i) idx[i] = uint32_t(hs[i] % dims);
  std::sort(idx.begin(), idx.end());
  Sparse v;
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j < idx.size() && idx[j] == idx[i]) ++j;
    v.push_back({idx[i], (1.0f + std::log(float(j - i))) * (idf.empty() ? 1.0f : idf[idx[i]])});
    i = j;
  }
  double n = 0;
  for (auto& [k, x] : v) n += double(x) * x;
  const float inv = n > 0 ? float(1.0 / std::sqrt(n)) : 0.0f;
  for (auto& [k, x] : v) x *= inv;
  return v;
}

float dot(const Sparse& x, const float* c) {
  float s = 0;
  for (auto& [k, v] : x) s += v * c[k];
  return s;
}

// Best centroid (ties to the lower index) and its similarity.
std::pair<int32_t, float> nearest(const Sparse& x, const std::vector<float>& cent, int64_t k, int64_t dims) {
  int32_t best = 0;
  float best_s = -2.0f;
  for (int64_t c = 0; c < k; ++c) {
    const float s = dot(x, cent.data() + c * dims);
    if (s > best_s) { best_s = s; best = int32_t(c); }
  }
  return {best, best_s};
}

double uniform(uint64_t seed, uint64_t stream, uint64_t i) {
  uint32_t w[4];
  philox_block(seed, stream, i, w);
  return (double(w[0] >> 5) * 67108864.0 + double(w[1] >> 6)) / 9007199254740992.0;
}

}  // namespace

std::vector<int32_t> cluster_topics(const std::vector<std::string_view>& texts, const TopicOptions& opt) {
  const int64_t n = int64_t(texts.size());
  std::vector<int32_t> labels(size_t(n), 0);
  const int64_t k = std::min<int64_t>(opt.n_topics, n);
  if (k <= 1) return labels;
  const uint64_t dims = uint64_t(opt.dims);

  // Fit on an evenly spaced sample.
  const int64_t m = std::min<int64_t>(n, std::max<int64_t>(opt.sample_docs, k));
  std::vector<int64_t> pick(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) pick[size_t(i)] = int64_t((__int128)i * n / m);

  // Document frequencies over the sample -> idf.
  std::vector<float> idf(dims, 0.0f);
  {
    std::vector<uint32_t> df(dims, 0);
    std::vector<uint64_t> hs;
    for (int64_t i : pick) {
      word_hashes(texts[size_t(i)], hs);
      std::vector<uint32_t> idx(hs.size());
      for (size_t j = 0; j < hs.size(); ++j) idx[j] = uint32_t(hs[j] % dims);
      std::sort(idx.begin(), idx.end());
      idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
      for (uint32_t d : idx) ++df[d];
    }
    for (uint64_t d = 0; d < dims; ++d) idf[d] = std::log(float(m + 1) / float(df[d] + 1)) + 1.0f;
  }
  std::vector<Sparse> xs(static_cast<size_t>(m));
#pragma omp parallel for schedule(dynamic, 64)
  for (int64_t i = 0; i < m; ++i) xs[size_t(i)] = features(texts[size_t(pick[size_t(i)])], idf, dims);

  // Greedy k-means++ seeding (several D^2-sampled candidates per centroid,
  // keep the one that lowers the potential most) on cosine distance.
  std::vector<float> cent(static_cast<size_t>(k) * dims, 0.0f);
  auto set_centroid = [&](int64_t c, const Sparse& x) {
    std::fill(cent.begin() + c * dims, cent.begin() + (c + 1) * dims, 0.0f);
    for (auto& [d, v] : x) cent[c * dims + d] = v;
  };
  auto sparse_dot = [](const Sparse& a, const Sparse& b) {  // both sorted by index
    double s = 0;
    for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
      if (a[i].first == b[j].first) s += double(a[i++].second) * b[j++].second;
      else if (a[i].first < b[j].first) ++i;
      else ++j;
    }
    return s;
  };
  std::vector<double> dist(static_cast<size_t>(m), 1.0);
  auto update_dist = [&](const Sparse& c, std::vector<double>& d) {
    for (int64_t i = 0; i < m; ++i) {
      const double x = std::max(0.0, 1.0 - sparse_dot(xs[size_t(i)], c));
      d[size_t(i)] = std::min(d[size_t(i)], x * x);
    }
  };
  int64_t first = int64_t(uniform(opt.seed, 0x70b1, 0) * double(m)) % m;
  set_centroid(0, xs[size_t(first)]);
  update_dist(xs[size_t(first)], dist);
  const int trials = 2 + int(std::log(double(k)));
  uint64_t draw = 1;
  for (int64_t c = 1; c < k; ++c) {
    double total = 0;
    for (double d : dist) total += d;
    int64_t best = c % m;
    double best_pot = INFINITY;
    std::vector<double> best_dist;
    for (int t = 0; t < trials; ++t) {
      int64_t cand = (c + t) % m;
      if (total > 0) {
        double r = uniform(opt.seed, 0x70b1, draw++) * total;
        for (int64_t i = 0; i < m; ++i) {
          r -= dist[size_t(i)];
          if (r <= 0) { cand = i; break; }
        }
      }
      std::vector<double> d = dist;
      update_dist(xs[size_t(cand)], d);
      double pot = 0;
      for (double x : d) pot += x;
      if (pot < best_pot) { best_pot = pot; best = cand; best_dist = std::move(d); }
    }
    set_centroid(c, xs[size_t(best)]);
    dist = std::move(best_dist);
  }

  // Lloyd iterations; centroids renormalised onto the sphere.
  std::vector<int32_t> assign(size_t(m), -1);
  std::vector<float> sim(static_cast<size_t>(m));
  for (int64_t it = 0; it < opt.iterations; ++it) {
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t i = 0; i < m; ++i) {
      auto [c, s] = nearest(xs[size_t(i)], cent, k, int64_t(dims));
      assign[size_t(i)] = c;
      sim[size_t(i)] = s;
    }
    std::fill(cent.begin(), cent.end(), 0.0f);
    std::vector<int64_t> count(size_t(k), 0);
    for (int64_t i = 0; i < m; ++i) {
      const int32_t c = assign[size_t(i)];
      ++count[size_t(c)];
      for (auto& [d, v] : xs[size_t(i)]) cent[c * dims + d] += v;
    }
    // An empty cluster takes the point worst served by its centroid.
    for (int64_t c = 0; c < k; ++c) {
      if (count[size_t(c)] > 0) continue;
      const int64_t worst = std::min_element(sim.begin(), sim.end()) - sim.begin();
      set_centroid(c, xs[size_t(worst)]);
      sim[size_t(worst)] = 2.0f;
    }
    for (int64_t c = 0; c < k; ++c) {
      double nn = 0;
      for (uint64_t d = 0; d < dims; ++d) nn += double(cent[c * dims + d]) * cent[c * dims + d];
      const float inv = nn > 0 ? float(1.0 / std::sqrt(nn)) : 0.0f;
      for (uint64_t d = 0; d < dims; ++d) cent[c * dims + d] *= inv;
    }
  }
#pragma omp parallel for schedule(dynamic, 64)
  for (int64_t i = 0; i < n; ++i) labels[size_t(i)] = nearest(features(texts[size_t(i)], idf, dims), cent, k, int64_t(dims)).first;
  return labels;
}

NgramModel::NgramModel(int order, int log2_slots)
    : order_(std::max(1, order)),
      mask_((uint64_t(1) << log2_slots) - 1),
      pair_count_(size_t(1) << log2_slots, 0),
      ctx_count_(size_t(1) << log2_slots, 0),
      ctx_types_(size_t(1) << log2_slots, 0) {}

namespace {
// Hash of the context of length `len` ending before position i, tagged with len.
inline uint64_t ctx_hash(const unsigned char* p, int64_t i, int len) {
  uint64_t h = 0x243F6A8885A308D3ull ^ uint64_t(len);
  for (int j = len; j >= 1; --j) h = (h ^ p[i - j]) * 0x100000001B3ull;
  return h;
}
inline uint64_t mix(uint64_t h, unsigned char c) { return (h ^ (uint64_t(c) + 1) * 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull; }
}  // namespace

void NgramModel::train(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  for (int64_t i = 0; i < int64_t(text.size()); ++i)
    for (int len = 0; len < order_ && len <= i; ++len) {
      const uint64_t h = ctx_hash(p, i, len);
      uint32_t& pc = pair_count_[mix(h, p[i]) & mask_];
      if (pc == 0) ++ctx_types_[h & mask_];
      if (pc < UINT32_MAX) ++pc;
      if (ctx_count_[h & mask_] < UINT32_MAX) ++ctx_count_[h & mask_];
    }
}

double NgramModel::mean_log2prob(std::string_view text) const {
  text = text.substr(0, kFeatureBytes);
  if (text.empty()) return 0.0;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  double total = 0;
  for (int64_t i = 0; i < int64_t(text.size()); ++i) {
    double prob = 1.0 / 256.0;
    for (int len = 0; len < order_ && len <= i; ++len) {  // shortest context first
      const uint64_t h = ctx_hash(p, i, len);
      const double c = ctx_count_[h & mask_], t = ctx_types_[h & mask_];
      if (c == 0) break;
      prob = (double(pair_count_[mix(h, p[i]) & mask_]) + t * prob) / (c + t);
    }
    total += std::log2(prob);
  }
  return total / double(text.size());
}

std::vector<int32_t> quantile_levels(const std::vector<double>& scores, int64_t n_levels) {
  const int64_t n = int64_t(scores.size());
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return scores[a] < scores[b]; });
  std::vector<int32_t> level(size_t(n), 0);
  for (int64_t r = 0; r < n; ++r) level[size_t(order[size_t(r)])] = int32_t((__int128)r * n_levels / n);
  return level;
}

}  // namespace mt
