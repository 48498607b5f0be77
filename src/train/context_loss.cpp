// context_loss.cpp — see context_loss.h.
#include "train/context_loss.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace mt {

void PositionLoss::add(const PositionLoss& o) {
  if (sum.empty()) sum.assign(o.sum.size(), 0.0), n.assign(o.n.size(), 0);
  for (size_t t = 0; t < o.sum.size(); ++t) sum[t] += o.sum[t], n[t] += o.n[t];
}

void PositionLoss::add(const std::vector<float>& losses, int64_t B, int64_t T, const int32_t* doc_start) {
  if (sum.empty()) sum.assign(size_t(T), 0.0), n.assign(size_t(T), 0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const size_t p = size_t(doc_start ? t - doc_start[b * T + t] : t);
      sum[p] += double(losses[size_t(b * T + t)]);
      ++n[p];
    }
}

nlohmann::json PositionLoss::bins() const {
  nlohmann::json out = nlohmann::json::array();
  for (size_t lo = 1; lo <= sum.size(); lo *= 2) {
    const size_t hi = std::min(sum.size(), 2 * lo - 1);
    double s = 0;
    int64_t k = 0;
    for (size_t p = lo; p <= hi; ++p) s += sum[p - 1], k += n[p - 1];
    out.push_back({{"from", lo}, {"to", hi}, {"tokens", k}, {"loss", k > 0 ? s / double(k) : NAN}});
  }
  return out;
}

void ContextLengthLoss::start(int64_t scored_per_window, const std::vector<int64_t>& context_lengths) {
  scored = scored_per_window;
  lengths = context_lengths;
  loss.assign(lengths.size(), {});
}

void ContextLengthLoss::add(const ContextLengthLoss& o) {
  if (lengths.empty()) start(o.scored, o.lengths);
  MT_CHECK(lengths == o.lengths && scored == o.scored, "context lengths differ between accumulators");
  for (size_t i = 0; i < loss.size(); ++i) loss[i].insert(loss[i].end(), o.loss[i].begin(), o.loss[i].end());
}

namespace {

// Mean and standard error of the mean.
std::pair<double, double> mean_se(const std::vector<double>& x) {
  const double n = double(x.size());
  if (x.empty()) return {NAN, NAN};
  double m = 0;
  for (double v : x) m += v;
  m /= n;
  if (x.size() < 2) return {m, NAN};
  double ss = 0;
  for (double v : x) ss += (v - m) * (v - m);
  return {m, std::sqrt(ss / (n - 1) / n)};
}

}  // namespace

nlohmann::json ContextLengthLoss::table() const {
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < lengths.size(); ++i) {
    const auto [m, se] = mean_se(loss[i]);
    nlohmann::json r = {{"context", lengths[i]}, {"loss", m}, {"se", se}};
    if (i + 1 < lengths.size()) {  // the same windows, half the context
      std::vector<double> d(loss[i].size());
      for (size_t w = 0; w < d.size(); ++w) d[w] = loss[i + 1][w] - loss[i][w];
      const auto [g, gse] = mean_se(d);
      r["gain"] = g;
      r["gain_se"] = gse;
    }
    rows.push_back(r);
  }
  return {{"scored_per_window", scored}, {"windows", loss.empty() ? 0 : int64_t(loss[0].size())}, {"lengths", rows}};
}

bool ContextLengthScorer::applies(int64_t seq_len, int64_t min_len) { return min_len >= 2 && seq_len >= 2 * min_len; }

ContextLengthScorer::ContextLengthScorer(const ModelConfig& cfg, int64_t batch, int64_t seq_len, int64_t min_len,
                                         AttentionKernel kernel, int32_t separator)
    : B_(batch), T_(seq_len), scored_(min_len / 2) {
  MT_CHECK(applies(seq_len, min_len), "seq_len {} min_len {}", seq_len, min_len);
  for (int64_t L = seq_len; L >= min_len; L /= 2) {
    lengths_.push_back(L);
    if (L == seq_len) continue;
    models_.push_back(std::make_unique<Transformer>(cfg, batch, L, MatmulPrecision::kFp32));
    models_.back()->set_attention_kernel(kernel);
    models_.back()->set_document_separator(separator);
  }
}

void ContextLengthScorer::score(const std::vector<float>& full_losses, const float* params, const float* router_bias,
                                const int32_t* windows, ContextLengthLoss& into) {
  if (into.lengths.empty()) into.start(scored_, lengths_);
  // Window b's scored tokens are its targets T - scored + 1 .. T: the last
  // `scored` of the full forward's losses, and of each shorter row, which
  // holds the window's last L + 1 ids.
  auto tail_mean = [&](const std::vector<float>& losses, int64_t L, int64_t b) {
    double s = 0;
    for (int64_t t = L - scored_; t < L; ++t) s += double(losses[size_t(b * L + t)]);
    return s / double(scored_);
  };
  for (int64_t b = 0; b < B_; ++b) into.loss[0].push_back(tail_mean(full_losses, T_, b));
  for (size_t i = 0; i < models_.size(); ++i) {
    const int64_t L = lengths_[i + 1];
    rows_.resize(size_t(B_ * (L + 1)));
    for (int64_t b = 0; b < B_; ++b) std::copy_n(windows + b * (T_ + 1) + (T_ - L), L + 1, rows_.data() + b * (L + 1));
    models_[i]->forward(params, rows_.data(), router_bias);
    for (int64_t b = 0; b < B_; ++b) into.loss[i + 1].push_back(tail_mean(models_[i]->token_losses(), L, b));
  }
}

}  // namespace mt
