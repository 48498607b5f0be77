// lsa_embedder.cpp — see lsa_embedder.h. Dense work is in double; products
// with the sparse matrix split the L columns over threads, so every element
// is a sum over documents in document order.
#include "data/topics/lsa_embedder.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/rng.h"
#include "data/topics/spherical_kmeans.h"
#include "data/topics/topic_words.h"

namespace mt {
namespace {

using Rows = std::vector<std::vector<std::pair<int32_t, float>>>;

// Modified Gram-Schmidt on the L columns of row-major X (R, L); a column that
// is (numerically) in the span of the earlier ones becomes zero.
void orthonormalize(std::vector<double>& X, int64_t R, int64_t L) {
  std::vector<double> first_norm(size_t(L), 0.0);
  for (int64_t j = 0; j < L; ++j) {
    for (int64_t p = 0; p < j; ++p) {
      double d = 0;
      for (int64_t r = 0; r < R; ++r) d += X[size_t(r * L + p)] * X[size_t(r * L + j)];
      for (int64_t r = 0; r < R; ++r) X[size_t(r * L + j)] -= d * X[size_t(r * L + p)];
    }
    double nn = 0;
    for (int64_t r = 0; r < R; ++r) nn += X[size_t(r * L + j)] * X[size_t(r * L + j)];
    const double inv = nn > 1e-20 ? 1.0 / std::sqrt(nn) : 0.0;
    for (int64_t r = 0; r < R; ++r) X[size_t(r * L + j)] *= inv;
  }
}

// Y (N, L) = A (N, V) X (V, L).
std::vector<double> times(const Rows& A, const std::vector<double>& X, int64_t L) {
  const int64_t N = int64_t(A.size());
  std::vector<double> Y(size_t(N * L), 0.0);
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t i = 0; i < N; ++i)
    for (auto [w, x] : A[size_t(i)])
      for (int64_t j = 0; j < L; ++j) Y[size_t(i * L + j)] += x * X[size_t(w * L + j)];
  return Y;
}

// Z (V, L) = A^T (V, N) Y (N, L); threads own column ranges.
std::vector<double> times_transposed(const Rows& A, const std::vector<double>& Y, int64_t V, int64_t L) {
  std::vector<double> Z(size_t(V * L), 0.0);
  const int64_t chunks = (L + 7) / 8;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t j0 = c * 8, j1 = std::min(L, j0 + 8);
    for (size_t i = 0; i < A.size(); ++i)
      for (auto [w, x] : A[i])
        for (int64_t j = j0; j < j1; ++j) Z[size_t(w * L + j)] += x * Y[i * size_t(L) + size_t(j)];
  }
  return Z;
}

// Eigen-decomposition of the symmetric M (L, L) by cyclic Jacobi rotations;
// returns eigenvalues, M's columns become eigenvectors in `vec` (row-major).
std::vector<double> jacobi_eigen(std::vector<double> M, int64_t L, std::vector<double>& vec) {
  vec.assign(size_t(L * L), 0.0);
  for (int64_t i = 0; i < L; ++i) vec[size_t(i * L + i)] = 1.0;
  auto at = [&](int64_t r, int64_t c) -> double& { return M[size_t(r * L + c)]; };
  for (int sweep = 0; sweep < 60; ++sweep) {
    double off = 0, diag = 0;
    for (int64_t p = 0; p < L; ++p)
      for (int64_t q = 0; q < L; ++q) (p == q ? diag : off) += at(p, q) * at(p, q);
    if (off <= 1e-24 * std::max(diag, 1e-300)) break;
    for (int64_t p = 0; p < L; ++p)
      for (int64_t q = p + 1; q < L; ++q) {
        if (std::fabs(at(p, q)) < 1e-300) continue;
        const double theta = (at(q, q) - at(p, p)) / (2 * at(p, q));
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int64_t k = 0; k < L; ++k) {  // M <- M J (columns p, q)
          const double mp = at(k, p), mq = at(k, q);
          at(k, p) = c * mp - s * mq;
          at(k, q) = s * mp + c * mq;
        }
        for (int64_t k = 0; k < L; ++k) {  // M <- J^T M (rows p, q)
          const double mp = at(p, k), mq = at(q, k);
          at(p, k) = c * mp - s * mq;
          at(q, k) = s * mp + c * mq;
        }
        for (int64_t k = 0; k < L; ++k) {
          const double vp = vec[size_t(k * L + p)], vq = vec[size_t(k * L + q)];
          vec[size_t(k * L + p)] = c * vp - s * vq;
          vec[size_t(k * L + q)] = s * vp + c * vq;
        }
      }
  }
  std::vector<double> val(static_cast<size_t>(L));
  for (int64_t i = 0; i < L; ++i) val[size_t(i)] = at(i, i);
  return val;
}

}  // namespace

void ConcatVectors::embed(std::string_view text, float* out_D) const {
  const int64_t da = a_->dim();
  a_->embed(text, out_D);
  b_->embed(text, out_D + da);
  normalize_row(out_D, dim());
}

LsaEmbedder::Sparse LsaEmbedder::tfidf(std::string_view text) const {
  std::vector<std::string> words;
  topic_words(text, max_doc_bytes_, words);
  std::vector<int32_t> ids;
  for (const std::string& w : words) {
    auto it = index_.find(w);
    if (it != index_.end()) ids.push_back(it->second);
  }
  std::sort(ids.begin(), ids.end());
  Sparse v;
  double nn = 0;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j < ids.size() && ids[j] == ids[i]) ++j;
    const float x = (1.0f + std::log(float(j - i))) * idf_V[size_t(ids[i])];
    v.push_back({ids[i], x});
    nn += double(x) * x;
    i = j;
  }
  const float inv = nn > 0 ? float(1.0 / std::sqrt(nn)) : 0.0f;
  for (auto& [k, x] : v) x *= inv;
  return v;
}

Result<std::unique_ptr<LsaEmbedder>> LsaEmbedder::fit(const std::vector<std::string_view>& sample,
                                                      const LsaOptions& opt) {
  if (sample.empty()) return Status::error("topics: no documents to fit LSA on");
  std::unique_ptr<LsaEmbedder> e(new LsaEmbedder());
  e->max_doc_bytes_ = opt.max_doc_bytes;
  // Vocabulary: words in >= 2 documents (a word in one document links
  // nothing), in sorted order so columns do not depend on hashing.
  std::map<std::string, int64_t> df;
  std::vector<std::string> words;
  for (std::string_view t : sample) {
    topic_words(t, opt.max_doc_bytes, words);
    std::sort(words.begin(), words.end());
    words.erase(std::unique(words.begin(), words.end()), words.end());
    for (std::string& w : words) ++df[w];
  }
  const double n = double(sample.size());
  for (const auto& [w, c] : df) {
    if (c < 2) continue;
    e->index_.emplace(w, int32_t(e->idf_V.size()));
    e->idf_V.push_back(float(std::log((n + 1) / double(c + 1)) + 1.0));
  }
  const int64_t V = int64_t(e->idf_V.size()), N = int64_t(sample.size());
  if (V == 0) return Status::error("topics: no word occurs in two sample documents; LSA has nothing to fit");
  Rows A(static_cast<size_t>(N));
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t i = 0; i < N; ++i) A[size_t(i)] = e->tfidf(sample[size_t(i)]);

  const int64_t D = std::max<int64_t>(1, std::min({opt.dim, N, V}));
  const int64_t L = std::min({D + 10, N, V});
  e->dim_ = D;
  std::vector<float> omega(static_cast<size_t>(V * L));
  fill_normal(omega.data(), V * L, 1.0f, opt.seed, 0x15a);
  std::vector<double> Om(omega.begin(), omega.end());
  std::vector<double> Q = times(A, Om, L);
  orthonormalize(Q, N, L);
  for (int power = 0; power < 2; ++power) {  // sharpens the spectrum: (A A^T)^q A Omega
    std::vector<double> Z = times_transposed(A, Q, V, L);
    orthonormalize(Z, V, L);
    Q = times(A, Z, L);
    orthonormalize(Q, N, L);
  }
  const std::vector<double> Bt = times_transposed(A, Q, V, L);  // (V, L) = (Q^T A)^T
  std::vector<double> M(size_t(L * L), 0.0);                     // B B^T
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t a = 0; a < L; ++a)
    for (int64_t b = 0; b < L; ++b) {
      double s = 0;
      for (int64_t w = 0; w < V; ++w) s += Bt[size_t(w * L + a)] * Bt[size_t(w * L + b)];
      M[size_t(a * L + b)] = s;
    }
  std::vector<double> U;
  const std::vector<double> lambda = jacobi_eigen(M, L, U);
  std::vector<int64_t> order(static_cast<size_t>(L));
  for (int64_t i = 0; i < L; ++i) order[size_t(i)] = i;
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return lambda[size_t(x)] > lambda[size_t(y)]; });
  // proj (V, D) = B^T U_D Sigma_D^-1: right singular vectors, so a document's
  // coordinates are x V_D = u Sigma (the LSA document vector).
  e->proj_VD.assign(size_t(V * D), 0.0f);
  const double top = std::max(lambda[size_t(order[0])], 1e-300);
  for (int64_t d = 0; d < D; ++d) {
    const int64_t col = order[size_t(d)];
    const double l = lambda[size_t(col)];
    if (l <= 1e-12 * top) continue;  // rank-deficient sample: a dead dimension
    const double inv_sigma = 1.0 / std::sqrt(l);
    for (int64_t w = 0; w < V; ++w) {
      double s = 0;
      for (int64_t a = 0; a < L; ++a) s += Bt[size_t(w * L + a)] * U[size_t(a * L + col)];
      e->proj_VD[size_t(w * D + d)] = float(s * inv_sigma);
    }
  }
  return e;
}

void LsaEmbedder::embed(std::string_view text, float* out_D) const {
  std::fill(out_D, out_D + dim_, 0.0f);
  for (auto [w, x] : tfidf(text))
    for (int64_t d = 0; d < dim_; ++d) out_D[d] += x * proj_VD[size_t(w) * size_t(dim_) + size_t(d)];
  normalize_row(out_D, dim_);
}

}  // namespace mt
