// spherical_kmeans.h — k-means on the unit sphere (cosine similarity) over
// dense document vectors (Dhillon & Modha 2001), with greedy k-means++
// seeding (Arthur & Vassilvitskii 2007) drawn from Philox. Used by the
// fastText topics and, with given initial centroids, by the keyword-seeded
// topics (seeded k-means, Basu et al. 2002).
// N documents, D vector dim, K clusters. Rows of x_ND must have unit norm
// (or be all zero: such a row joins cluster 0 and moves no centroid).
// Deterministic: assignments are per row, sums run in row order, so the
// result does not depend on the OpenMP thread count.
#pragma once
#include <cstdint>
#include <vector>

namespace mt {

struct KmeansResult {
  std::vector<float> cent_KD;   // (K, D) unit-norm centroids
  std::vector<int32_t> assign;  // (N) cluster of each row
};

// k <= n. init_KD: K starting centroids (unit norm); empty = k-means++ seeding.
KmeansResult spherical_kmeans(const float* x_ND, int64_t n, int64_t d, int64_t k, int64_t iterations,
                              uint64_t seed, const std::vector<float>& init_KD = {});

// Index of the centroid most similar to x_D (ties to the lower index).
int32_t nearest_centroid(const float* x_D, const float* cent_KD, int64_t k, int64_t d);

// Scales x_D to unit norm; an all-zero row stays zero.
void normalize_row(float* x_D, int64_t d);

}  // namespace mt
