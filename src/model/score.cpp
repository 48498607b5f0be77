// score.cpp — sequences in groups of the decoder's batch, each group fed in
// calls of at most max_rows rows; log-softmax per predicted row in double.
#include "model/score.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace mt {
namespace {
// log softmax(logits)[target], and whether target is the argmax (ties: lower id).
std::pair<double, bool> log_prob(const float* logits, int64_t V, int32_t target) {
  const int64_t arg = std::max_element(logits, logits + V) - logits;
  const double m = logits[arg];
  double s = 0.0;
  for (int64_t v = 0; v < V; ++v) s += std::exp(double(logits[v]) - m);
  return {double(logits[target]) - m - std::log(s), arg == target};
}
}  // namespace

std::vector<ContinuationScore> score_continuations(Decoder& dec, const std::vector<std::vector<int32_t>>& seqs,
                                                   const std::vector<int64_t>& first,
                                                   const std::function<void(int64_t, int64_t)>& progress) {
  const int64_t S = int64_t(seqs.size()), Bd = dec.options().batch, R = dec.options().max_rows;
  const int64_t V = dec.config().vocab_size;
  std::vector<ContinuationScore> out(static_cast<size_t>(S));
  std::vector<int32_t> toks, ids;
  std::vector<int64_t> idx;  // token index within its sequence, per row
  for (int64_t g0 = 0; g0 < S; g0 += Bd) {
    const int64_t g1 = std::min(S, g0 + Bd);
    std::vector<int64_t> fed(size_t(g1 - g0), 0);
    for (int64_t s = g0; s < g1; ++s) {
      MT_CHECK(first[size_t(s)] >= 1 && first[size_t(s)] <= int64_t(seqs[size_t(s)].size()),
               "score: continuation of sequence {} starts at {} of {}", s, first[size_t(s)], seqs[size_t(s)].size());
      dec.cache().reset(s - g0);
    }
    for (;;) {
      toks.clear();
      ids.clear();
      idx.clear();
      for (int64_t s = g0; s < g1 && int64_t(toks.size()) < R; ++s) {
        // The last token predicts nothing, so it is never fed.
        const int64_t n = int64_t(seqs[size_t(s)].size()) - 1;
        int64_t& f = fed[size_t(s - g0)];
        while (f < n && int64_t(toks.size()) < R) {
          toks.push_back(seqs[size_t(s)][size_t(f)]);
          ids.push_back(int32_t(s - g0));
          idx.push_back(f++);
        }
      }
      if (toks.empty()) break;
      dec.forward(toks.data(), ids.data(), int64_t(toks.size()));
      for (size_t r = 0; r < toks.size(); ++r) {
        const int64_t s = g0 + ids[r], t = idx[r] + 1;  // row r predicts token t
        if (t < first[size_t(s)]) continue;
        const auto [lp, greedy] = log_prob(dec.logits() + int64_t(r) * V, V, seqs[size_t(s)][size_t(t)]);
        out[size_t(s)].logprob += lp;
        out[size_t(s)].greedy = out[size_t(s)].greedy && greedy;
      }
    }
    if (progress) progress(g1, S);
  }
  return out;
}

}  // namespace mt
