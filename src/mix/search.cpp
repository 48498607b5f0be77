// search.cpp — see search.h.
#include "mix/search.h"

#include <algorithm>
#include <cmath>
#include <queue>

#include "core/check.h"
#include "mix/dirichlet.h"

namespace mt::mix {
namespace {

// Candidates are drawn and predicted this many at a time: sample k is a pure
// function of (seed, k), so chunking changes nothing but peak memory
// (100k x 200 doubles at once would be 160 MB).
constexpr int64_t kChunk = 4096;

struct Candidate {
  double predicted;
  int64_t index;
  std::vector<double> w;
};
// Orders by (prediction, index): the heap's top is the worst kept candidate,
// and equal predictions keep the earlier draw.
bool better(const Candidate& a, const Candidate& b) {
  return a.predicted < b.predicted || (a.predicted == b.predicted && a.index < b.index);
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

}  // namespace

std::vector<double> minimize_on_capped_simplex(const SimplexObjective& f, const std::vector<double>& w0,
                                               const std::vector<double>& cap, int64_t max_steps, int64_t* steps) {
  std::vector<double> w = project_capped_simplex(w0, cap), g(w.size()), g_next(w.size());
  double fw = f(w, &g);
  double eta = 1.0;
  int64_t accepted = 0;
  while (accepted < max_steps) {
    std::vector<double> trial(w.size()), next;
    double f_next = 0;
    bool ok = false;
    // Halve until the quadratic upper bound holds; 200 halvings take eta from
    // 1 to 1e-60, far below any curvature a loss model has.
    for (int halvings = 0; halvings < 200; ++halvings, eta *= 0.5) {
      for (size_t i = 0; i < w.size(); ++i) trial[i] = w[i] - eta * g[i];
      next = project_capped_simplex(trial, cap);
      f_next = f(next, &g_next);
      double lin = 0, sq = 0;
      for (size_t i = 0; i < w.size(); ++i) {
        lin += g[i] * (next[i] - w[i]);
        sq += (next[i] - w[i]) * (next[i] - w[i]);
      }
      if (std::isfinite(f_next) && f_next <= fw + lin + sq / (2 * eta) + 1e-15 * std::fabs(fw)) {
        ok = true;
        break;
      }
    }
    // The test's slack lets rounding near the optimum pass a slightly worse
    // point; never trade the held point for one.
    if (!ok || f_next > fw) break;
    const double moved = max_abs_diff(next, w);
    w.swap(next);
    g.swap(g_next);
    fw = f_next;
    ++accepted;
    if (moved < 1e-13) break;
    eta *= 2;
  }
  if (steps) *steps = accepted;
  return w;
}

SearchResult search_simplex(const TargetModel& model, const std::vector<double>& center,
                            const std::vector<double>& cap, const SearchOptions& opt) {
  MT_CHECK(model.fitted(), "search before fit");
  const int64_t m = model.weights();
  MT_CHECK(int64_t(center.size()) == m && int64_t(cap.size()) == m, "model has {} weights, center {}, cap {}", m,
           center.size(), cap.size());
  MT_CHECK(opt.candidates >= 1 && opt.top_k >= 1 && opt.gradient_steps >= 0, "candidates {}, top_k {}, steps {}",
           opt.candidates, opt.top_k, opt.gradient_steps);
  const int64_t top_k = std::min(opt.top_k, opt.candidates);
  const uint64_t seed = opt.seed ^ kSearchSeedSalt;

  std::priority_queue<Candidate, std::vector<Candidate>, decltype(&better)> worst_on_top(&better);
  for (int64_t first = 0; first < opt.candidates; first += kChunk) {
    const int64_t n = std::min(kChunk, opt.candidates - first);
    std::vector<std::vector<double>> w = sample_mixtures(center, cap, n, opt.concentration, seed, first);
    const std::vector<double> p = model.predict_batch(w);
    for (int64_t k = 0; k < n; ++k) {
      Candidate c{p[size_t(k)], first + k, {}};
      if (int64_t(worst_on_top.size()) < top_k) {
        c.w = std::move(w[size_t(k)]);
        worst_on_top.push(std::move(c));
      } else if (better(c, worst_on_top.top())) {
        c.w = std::move(w[size_t(k)]);
        worst_on_top.pop();
        worst_on_top.push(std::move(c));
      }
    }
  }
  std::vector<double> avg(size_t(m), 0.0), best_w;
  double best_p = INFINITY;
  while (!worst_on_top.empty()) {  // pops worst first; the last one popped is the best
    const Candidate& c = worst_on_top.top();
    for (int64_t i = 0; i < m; ++i) avg[size_t(i)] += c.w[size_t(i)] / double(top_k);
    best_p = c.predicted;
    best_w = c.w;
    worst_on_top.pop();
  }
  // The average of feasible points is feasible; the projection only removes
  // the rounding that left its sum a few ulps away from 1.
  avg = project_capped_simplex(avg, cap);

  SearchResult r;
  r.best_candidate_predicted = best_p;
  r.top_k_average_predicted = model.predict(avg);
  r.weights = best_w;
  r.predicted = best_p;
  r.method = "best-candidate";
  if (r.top_k_average_predicted <= r.predicted || opt.choice == SearchChoice::kTopKAverage) {  // ties prefer the average: it is the more robust choice
    r.weights = avg;
    r.predicted = r.top_k_average_predicted;
    r.method = "top-k-average";
  }
  if (opt.refine_gradient && model.kind() == RegressorKind::kLogLinear && opt.gradient_steps > 0) {
    const SimplexObjective f = [&](const std::vector<double>& w, std::vector<double>* g) {
      *g = model.gradient(w);
      return model.predict(w);
    };
    std::vector<double> refined = minimize_on_capped_simplex(f, avg, cap, opt.gradient_steps, &r.refine_steps);
    r.refined_predicted = model.predict(refined);
    if (r.refined_predicted < r.predicted && opt.choice == SearchChoice::kModelOptimum) {
      r.weights = std::move(refined);
      r.predicted = r.refined_predicted;
      r.method = "gradient-refined";
    }
  }
  return r;
}

}  // namespace mt::mix
