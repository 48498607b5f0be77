// score.h — log-likelihood of continuations (how lm-evaluation-harness scores
// multiple-choice tasks): for each sequence, the sum over its tokens at index
// >= first[i] of log p(token | everything before it), from the KV-cache
// decoder in batches of the decoder's size. Each sequence is scored alone
// (its own cache row), so scores do not depend on batching.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "model/decoder.h"

namespace mt {

struct ContinuationScore {
  double logprob = 0;    // sum of log-probabilities of the continuation tokens
  bool greedy = true;    // every continuation token was the argmax (lm-eval's is_greedy)
};

// seqs[i]: context then continuation ids; first[i] >= 1 is the continuation's
// first index. Every sequence must fit the decoder's max_len (checked).
// `progress(done, total)`, if given, after each group of sequences.
std::vector<ContinuationScore> score_continuations(
    Decoder& dec, const std::vector<std::vector<int32_t>>& seqs, const std::vector<int64_t>& first,
    const std::function<void(int64_t done, int64_t total)>& progress = {});

}  // namespace mt
